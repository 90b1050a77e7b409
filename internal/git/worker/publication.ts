// The publication cycle of a branch worker: bring the checkout to the projection of the retained
// writes, and push it without force. Two pieces of state decide whether the cycle fetches first,
// and they are kept apart on purpose. baseTrusted says the worker can vouch for where the remote
// is (its last fetch, or its last push); anything that can no longer prove it drops it.
// checkoutApplied counts the retained writes whose commits the checkout holds on top of its root;
// a write that failed part-way makes it unknown, which only a reset clears. Either doubt costs
// one fetch, a reset, and a replay of every retained write's decided actions. A stale "trusted"
// is caught by the push, whose lease names the root it expects the branch at. A remote that
// moved under the push is tried again after a short jittered pause, never on the outage
// schedule (contention.ts). A branch pushed to a review ref (GitBranch spec.push.refspec) is
// never written: the worker's commits continue from its last review push while the fetched
// branch stays where they were made on, and everything that asks where the remote is (the
// check before a push, a refresh, a replay) compares that fetched branch (engine/root.ts).
import type { Logger } from "../../telemetry/logger.ts";
import type { RandomSource } from "../../timing/backoff.ts";
import { sleep } from "../../timing/sleep.ts";
import { RemoteMovedError, type Repository } from "../engine/clone.ts";
import { ContentionSchedule, movingPauseMs } from "./contention.ts";
import type { Contention } from "./report.ts";
import { faultOf } from "../engine/fault.ts";
import type { Fault } from "../engine/gitexec.ts";
import { materialize, type MaterializeOptions, type WorkTree } from "../folder/materialize.ts";
import { ParentMissingError, fetchedRoot, pushedRoot, rootCommit, type Root } from "../engine/root.ts";
import type { Intake, TargetFolders } from "../folder/targetfolders.ts";
import type { DecidedWrite } from "../folder/writes.ts";
import { errorText } from "../../telemetry/errortext.ts";

export interface PublicationOptions {
  repository: Repository & WorkTree;
  materialize: MaterializeOptions;
  folders: TargetFolders;
  logger: Logger;
  /** Attempts of one cycle while the remote keeps moving. */
  attempts?: number;
  /** How long one cycle may take, every call to the server included: 5 minutes. */
  cycleDeadlineMs?: number;
  /** What the pauses between attempts on a moving remote are jittered by. */
  random?: RandomSource;
  /**
   * How long one cycle commits before it pushes what it has: a backlog goes out in pushes of
   * what fits, while the rest is committed, instead of in one push after all of it. 2 s.
   */
  commitBudgetMs?: number;
  /** Called after every fetch, with the tip the remote branch is at (undefined: it has none). */
  onFetched?: (tip: string | undefined) => void;
  /** Each fetch, push and failed cycle, for the git_* metrics. */
  onGit?: (event: GitEvent) => void;
  /**
   * Why this replica may not push now, asked right before each push; undefined: it may. A
   * replica whose branch Lease is not safely held pushes nothing: the writes it retained stay in
   * the durable queue for the replica that holds the branch next, never replayed from here onto
   * that replica's tip.
   */
  mayPush?: () => string | undefined;
}

/** A push this replica may not make: its branch Lease is not safely held (Publication's mayPush). */
export class FencedError extends Error {
  override name = "FencedError";
}

/** What a publication did with the remote, and how each call ended. */
export type GitEvent =
  | { operation: "fetch"; outcome: "ok" | "failed" }
  | { operation: "push"; outcome: "landed" | "rejected" | "failed" | "fenced" }
  /** A cycle that kept every write: why. */
  | { operation: "cycle"; outcome: "remote" | "local" | "parent_missing" | "contended" };

/** The failed cycle's reason, for git_commit_failures_total. */
function failureOf(outcome: CycleOutcome): GitEvent | undefined {
  if (outcome.kind === "contended") return { operation: "cycle", outcome: "contended" };
  if (outcome.kind !== "failed") return undefined;
  if (outcome.parentMissing) return { operation: "cycle", outcome: "parent_missing" };
  return { operation: "cycle", outcome: outcome.fault === "local" ? "local" : "remote" };
}

export type CycleOutcome =
  /** The first `published` retained writes are on the remote at `commit`. */
  | { kind: "pushed"; commit: string; published: number }
  /** The first `published` retained writes changed nothing on the current tip: nothing to push. */
  | { kind: "settled"; published: number }
  /** The remote kept moving through every attempt: every write is kept, and tried again soon. */
  | { kind: "contended"; error: string; moves: number }
  /** The remote could not be reached: every write is kept. */
  | { kind: "failed"; error: string; parentMissing?: boolean; fault?: Fault };

/** What a stopping worker's one publication could not land, and why. */
export interface Unpublished {
  error: string;
  /** Per write, its GitTarget and how many changes it carries. */
  writes: string[];
}

export class Publication {
  private baseTrusted = false;
  private checkoutApplied: number | "unknown" = 0;
  private root: Root | undefined;
  /** The commits the checkout holds on its root, in order, with the write that made each. */
  private made: { write: DecidedWrite; commit: string }[] = [];
  private readonly materializing: MaterializeOptions;
  private readonly contention: ContentionSchedule;
  /** Fetches made so far: what the base-trust tests count. */
  fetches = 0;

  constructor(private readonly options: PublicationOptions) {
    this.contention = new ContentionSchedule(options.random);
    const { onCommitted } = options.materialize;
    this.materializing = {
      ...options.materialize,
      onCommitted: (write, commit) => {
        this.made.push({ write, commit });
        onCommitted?.(write, commit);
      },
    };
  }

  /** How often the branch moved under our pushes since the last one landed, while it keeps doing so. */
  get contended(): Contention | undefined {
    return this.contention.current;
  }

  /** When the next cycle may start on a contended branch; 0 otherwise. */
  get contendedUntil(): number {
    return this.contention.dueAt;
  }

  /**
   * Where the worker believes the branch is (or, while it is missing, its parent), once it has
   * fetched or pushed. A review push leaves the branch where it was: this is still that commit.
   */
  get tip(): string | undefined {
    return this.baseTrusted && this.root ? rootCommit(fetchedRoot(this.root)) : undefined;
  }

  /** Whether the worker can vouch for where the remote is: its last fetch, or its last push. */
  get trusted(): boolean {
    return this.baseTrusted && this.root !== undefined;
  }

  /** The remote branch's own tip, once the worker has fetched or pushed; undefined while it has none. */
  get branchTip(): string | undefined {
    const fetched = this.baseTrusted && this.root ? fetchedRoot(this.root) : undefined;
    return fetched?.from === "branch" ? fetched.commit : undefined;
  }

  /** Drops base trust: the next cycle fetches. */
  distrust(): void {
    this.baseTrusted = false;
  }

  /**
   * Proves where the remote branch is with one advertisement, and fetches only when it is not
   * where the worker believed: what proved it. Only for an idle branch, with nothing retained.
   */
  async refresh(): Promise<"Fetch" | "Advertisement"> {
    const { repository } = this.options;
    repository.setCycleDeadline(AbortSignal.timeout(this.options.cycleDeadlineMs ?? 5 * 60_000));
    try {
      if (this.baseTrusted && this.root && (await repository.holds(this.root))) return "Advertisement";
      this.baseTrusted = false;
      await this.ensureBase();
      return "Fetch";
    } catch (err) {
      if (faultOf(err) === "local") await this.resetClone(err);
      throw err;
    } finally {
      repository.setCycleDeadline(undefined);
    }
  }

  /**
   * Commits retained writes the checkout does not hold yet, for about `sliceMs`, while the push
   * waits for its cooldown: the cycle then pushes what is committed already. Only on a trusted
   * base with a known checkout, since it never fetches; whatever fails is left to the cycle,
   * which resets and replays. Returns whether it committed anything.
   */
  async commitAhead(retained: DecidedWrite[], onReleased: (items: Intake[]) => void, sliceMs: number) {
    const applied = this.checkoutApplied;
    if (!this.baseTrusted || applied === "unknown" || !this.root || applied >= retained.length) return false;
    try {
      await this.applyRetained(retained, onReleased, Date.now() + sliceMs);
    } catch (err) {
      this.options.logger.error("committing ahead of the push failed; the next cycle replays", {
        error: errorText(err),
      });
      if (faultOf(err) === "local") await this.resetClone(err);
    }
    return true;
  }

  /**
   * Makes the retained writes on the remote's current tip and pushes them, within `deadlineMs`:
   * all of them, or those committed within the commit budget (`all` lifts it, for shutdown).
   * `onReleased` gets the live items a snapshot's measurement released, to be written before
   * anything later.
   */
  async cycle(
    retained: DecidedWrite[],
    onReleased: (items: Intake[]) => void,
    deadlineMs = this.options.cycleDeadlineMs ?? 5 * 60_000,
    all = false,
  ): Promise<CycleOutcome> {
    const { repository } = this.options;
    const deadline = AbortSignal.timeout(deadlineMs);
    repository.setCycleDeadline(deadline);
    const budget = all ? Infinity : (this.options.commitBudgetMs ?? 2_000);
    try {
      const outcome = await this.attempts(retained, onReleased, deadline, budget);
      if (outcome.kind === "contended") this.contention.moved(outcome.moves, Date.now());
      else this.contention.ended();
      return this.reported(outcome);
    } catch (err) {
      this.contention.ended();
      // The remote may have moved while it could not be reached: the next cycle proves it again.
      this.baseTrusted = false;
      const error = errorText(err);
      if (faultOf(err) === "local") {
        await this.resetClone(err);
        return this.reported({ kind: "failed", error, fault: "local" });
      }
      return this.reported(
        err instanceof ParentMissingError
          ? { kind: "failed", error, parentMissing: true }
          : { kind: "failed", error },
      );
    } finally {
      repository.setCycleDeadline(undefined);
    }
  }

  private reported(outcome: CycleOutcome): CycleOutcome {
    const failure = failureOf(outcome);
    if (failure) this.options.onGit?.(failure);
    return outcome;
  }

  /**
   * Shutdown's one publication of everything retained, within `graceMs`: what it left
   * unpublished, undefined when all of it landed.
   */
  async last(retained: DecidedWrite[], graceMs: number): Promise<Unpublished | undefined> {
    const outcome = await this.cycle(retained, () => undefined, graceMs, true);
    if (!("error" in outcome)) return undefined;
    const writes = retained.map((w) => `${w.target.key}: ${w.changes.length} change(s)`);
    this.options.logger.error("shutting down with writes that could not be published", {
      error: outcome.error,
      unpublished: writes,
    });
    return { error: outcome.error, writes };
  }

  /**
   * Plans or replays the retained writes on the remote's tip and pushes, again after a short
   * jittered pause each time the remote moved under the push.
   */
  private async attempts(
    retained: DecidedWrite[],
    onReleased: (items: Intake[]) => void,
    deadline: AbortSignal,
    budgetMs: number,
  ): Promise<CycleOutcome> {
    const { repository, logger } = this.options;
    const attempts = this.options.attempts ?? 5;
    for (let attempt = 1; ; attempt++) {
      try {
        const fetched = await this.ensureBase();
        const published = await this.applyRetained(retained, onReleased, Date.now() + budgetMs);
        if (repository.headCommit === rootCommit(this.root)) {
          // "Already present" is a claim about the remote: a save that changed nothing settles
          // only once the remote shows the tip it was planned on, else it is replayed.
          const saves = retained.slice(0, published).some((w) => w.save);
          if (saves && !fetched && !(await repository.holds(this.root!)))
            throw new RemoteMovedError("the remote branch moved past the tip a save was planned on");
          this.checkoutApplied = 0;
          this.made = [];
          return { kind: "settled", published };
        }
        const made = repository.headCommit!;
        const commit = await this.push(this.root!);
        // A signed push carries the same trees under new hashes: the folders are at them now.
        if (commit !== made) this.options.folders.rewritten(made, commit);
        await this.namePushedSaves(commit !== made ? commit : undefined);
        // The branch's new tip; after a review push, the branch is where it was and the next
        // commits go on top of this one.
        this.root = pushedRoot(this.root!, commit, repository.reviewRef !== undefined);
        this.checkoutApplied = 0;
        return { kind: "pushed", commit, published };
      } catch (err) {
        if (!(err instanceof RemoteMovedError)) throw err;
        this.baseTrusted = false;
        if (attempt >= attempts) {
          return {
            kind: "contended",
            error: `the remote branch kept moving through ${attempts} attempts`,
            moves: attempts,
          };
        }
        logger.info("the remote moved; replaying the retained writes on its new tip", { attempt });
        await sleep(movingPauseMs(attempt, this.options.random), deadline);
      }
    }
  }

  /**
   * A local fault (a damaged worktree or repository) is not repaired by waiting: the clone is
   * removed, so the next cycle clones afresh and replays every retained write onto it, and each
   * folder is read again from the new checkout.
   */
  private async resetClone(fault: unknown): Promise<void> {
    const { repository, folders, logger } = this.options;
    logger.error("the local clone failed; it is removed and cloned afresh", { error: String(fault) });
    this.baseTrusted = false;
    this.checkoutApplied = "unknown";
    for (const target of folders.targets()) folders.inventory(target).invalidate();
    await repository
      .discard()
      .catch((err: unknown) => logger.error("removing the local clone failed", { error: errorText(err) }));
  }

  /**
   * Gives each save the push carried the commit the remote holds for it: its own, or (signed on
   * the way out, `rewrittenTo` the new tip) the one at its place on the new first-parent line.
   */
  private async namePushedSaves(rewrittenTo: string | undefined): Promise<void> {
    const made = this.made;
    this.made = [];
    if (!made.some(({ write }) => write.save)) return;
    const line = rewrittenTo
      ? await this.options.repository.firstParents(rootCommit(this.root), rewrittenTo)
      : made.map((m) => m.commit);
    made.forEach(({ write }, i) => {
      if (write.save) write.save.commit = line[i];
    });
  }

  /** One push, reported: landed, rejected (the remote moved), or failed. */
  private async push(root: Root): Promise<string> {
    // Asked with nothing awaited before the push starts: the Lease's margin covers the push.
    const fenced = this.options.mayPush?.();
    if (fenced) {
      this.options.onGit?.({ operation: "push", outcome: "fenced" });
      throw new FencedError(`this replica may not push: ${fenced}`);
    }
    try {
      const commit = await this.options.repository.push(root);
      this.options.onGit?.({ operation: "push", outcome: "landed" });
      return commit;
    } catch (err) {
      this.options.onGit?.({
        operation: "push",
        outcome: err instanceof RemoteMovedError ? "rejected" : "failed",
      });
      throw err;
    }
  }

  /**
   * A trusted base with a checkout that is the projection of the retained writes needs no fetch:
   * whether this one fetched.
   */
  private async ensureBase(): Promise<boolean> {
    if (this.baseTrusted && this.checkoutApplied !== "unknown" && this.root) return false;
    this.fetches++;
    try {
      this.root = await this.options.repository.fetchAndReset();
      this.options.onGit?.({ operation: "fetch", outcome: "ok" });
    } catch (err) {
      this.options.onGit?.({ operation: "fetch", outcome: "failed" });
      throw err;
    }
    this.options.onFetched?.(this.root.from === "branch" ? this.root.commit : undefined);
    this.baseTrusted = true;
    this.checkoutApplied = 0;
    this.made = [];
    return true;
  }

  /**
   * Commits each retained write the checkout does not hold yet, planned the first time and
   * replayed after, until `stopAt` has passed (one at least): how many the checkout holds.
   */
  private async applyRetained(
    retained: DecidedWrite[],
    onReleased: (items: Intake[]) => void,
    stopAt: number,
  ): Promise<number> {
    const { repository, folders } = this.options;
    const first = this.checkoutApplied as number;
    for (let i = first; i < retained.length; i++) {
      if (i > first && Date.now() >= stopAt) break;
      const write = retained[i]!;
      const inventory = folders.inventory(write.target);
      this.checkoutApplied = "unknown";
      let result;
      if (write.save) Object.assign(write.save, { refused: undefined, empty: undefined, commit: undefined });
      try {
        const state = folders.state(write.target);
        result = await materialize(repository, inventory, write, this.materializing, state);
      } catch (err) {
        // What a failed write left in the worktree is not what the inventory says.
        inventory.invalidate();
        throw err;
      }
      // A save keeps every object it captured, so a replay onto a newer tip decides its outcome.
      write.decided ??= write.save ? write.changes : result.decided;
      if (write.save) {
        write.save.refused = result.refusal?.message ?? result.refusedWrites?.[0]?.message;
        write.save.empty = result.empty === true;
      }
      onReleased(folders.written(write, result));
      this.checkoutApplied = i + 1;
    }
    // Each write's commit was streamed while the next was made: the head is theirs once answered.
    const held = this.checkoutApplied;
    this.checkoutApplied = "unknown";
    await repository.settle();
    this.checkoutApplied = held;
    return this.checkoutApplied as number;
  }
}
