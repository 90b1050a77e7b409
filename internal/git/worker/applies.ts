// A branch worker's side of applying (applier-claims.md, "The design, as built"): every
// observation of the remote passes here, the worker asks once per wake whether an apply is due,
// flushes before it sends, and hands each attempt to the dispatcher, whose report comes back
// through the worker's queue. What is due is decided by internal/applier/due.ts; this file only
// feeds it what the worker sees and carries its answers out.
import { randomBytes } from "node:crypto";
import { ApplyDue, type Applier, type Attempt, type Outcome, type Reason } from "../../applier/due.ts";
import type { Logger } from "../../telemetry/logger.ts";
import type { NamespacedName } from "../../types/names.ts";

/** What the process provides a worker for applying: its appliers, and how an attempt is carried out. */
export interface ApplyHooks {
  /** The appliers on this branch: every claim an attached GitTarget names, with the targets it covers. */
  appliers(): Applier[];
  /**
   * Carries one attempt out, and never retries: the worker decides every retry. `current` says
   * whether the attempt's commit is still the tip the worker published.
   */
  dispatch(attempt: Attempt, current: () => boolean): Promise<Outcome>;
  /** The commit an applier's last succeeded operation applied, as its claim's status records it. */
  lastApplied?(claim: NamespacedName): string | undefined;
}

/** An attempt's end, as the worker's queue carries it back to the loop. */
export interface AttemptReport {
  attempt: Attempt;
  outcome: Outcome;
}

/** What the loop should do about applying on this wake. */
export type ApplyStep =
  /** An apply is due: close the window and take the flush mark. */
  | { kind: "flush" }
  /** The mark's writes are not all published yet: publish now, without the cooldown. */
  | { kind: "publish" }
  /** The tip is not known: prove where the remote is first. */
  | { kind: "prove" }
  /** Everything up to the mark is published: send the due attempts for `tip`. */
  | { kind: "send"; tip: string }
  | undefined;

/**
 * The refusals of an edit to a document the folder holds: a plaintext sensitive document the
 * operator never rewrites, and a document the folder only reads (an overlay's base) that its
 * overrides cannot express. Any other (a new object with nowhere to land) has nothing to revert.
 */
const reappliable = new Set(["plaintext_sensitive", "read_only_context"]);

export class WorkerApplies {
  private readonly due = new ApplyDue(() => `gitops-reverser-${randomBytes(8).toString("hex")}`);
  /** The tip last observed; null before the first observation (the baseline). */
  private known: string | undefined | null = null;
  /** Retained writes of the flush mark still to publish; undefined while no flush is under way. */
  private mark: number | undefined;
  private readonly restored = new Set<string>();

  constructor(
    private readonly hooks: ApplyHooks,
    private readonly logger: Logger,
  ) {}

  /** Whether a flush is under way. */
  get flushing(): boolean {
    return this.mark !== undefined;
  }

  /**
   * A fetch found the remote at `tip`. The first observation after a start is the baseline (a
   * converge pending for every applier); any later tip the worker did not push is a ForeignCommit.
   */
  fetched(tip: string | undefined): void {
    if (this.known !== null && tip === this.known) return;
    this.due.observe(this.appliers(), false);
    this.known = tip;
  }

  /** A push of the worker's own landed at `tip`: nothing is pending for it. */
  pushed(tip: string): void {
    if (this.known === null) this.due.observe(this.appliers(), false);
    this.due.observe(this.appliers(), true);
    this.known = tip;
  }

  /** Writes the publication published, counted off the flush mark. */
  published(count: number): void {
    if (this.mark !== undefined) this.mark = Math.max(0, this.mark - count);
  }

  /** A new document in a target's folder (a live create, or a resync's add): its applier adopts it. */
  placed(targetKey: string): void {
    this.raise(targetKey, "CatchUp");
  }

  /**
   * A write refused at the boundary: a Refusal, where the target opted in with Reapply and the
   * refusal was of an edit to a document the folder holds (reapplying the tip reverts it).
   */
  refused(targetKey: string, reason: string): void {
    if (!reappliable.has(reason)) return;
    this.raise(targetKey, "Refusal", (onRefusal) => onRefusal === "Reapply");
  }

  /** The next step of applying on this wake; `held` (a CommitRequest, an outage) holds every send. */
  next(now: number, facts: { tip: string | undefined; trusted: boolean; pending: number; held: boolean }) {
    const appliers = this.appliers();
    if (this.known === null || facts.held) return undefined;
    if (this.mark === undefined) {
      if (!this.due.wants(appliers, this.known, now)) return undefined;
      this.mark = Infinity;
      return { kind: "flush" } as const;
    }
    if (this.mark === Infinity) this.mark = facts.pending;
    if (this.mark > 0 && facts.pending > 0) return { kind: "publish" } as const;
    if (!facts.trusted) return { kind: "prove" } as const;
    this.mark = undefined;
    return facts.tip === undefined ? undefined : ({ kind: "send", tip: facts.tip } as const);
  }

  /** Sends every attempt due at `tip`; each report comes back through `report`. */
  send(tip: string, now: number, current: (commit: string) => boolean, report: (r: AttemptReport) => void) {
    for (const attempt of this.due.due(this.appliers(), tip, now)) {
      this.logger.info("asking an applier to apply", {
        claim: `${attempt.claim.namespace}/${attempt.claim.name}`,
        commit: attempt.commit,
        reasons: attempt.targets.map((t) => t.reason),
      });
      void this.hooks
        .dispatch(attempt, () => current(attempt.commit))
        .catch((err: unknown): Outcome => {
          this.logger.error("an apply attempt failed", { error: String(err) });
          return { kind: "failed" };
        })
        .then((outcome) => report({ attempt, outcome }));
    }
  }

  /** An attempt's end, handled on the worker's loop. */
  reported({ attempt, outcome }: AttemptReport, now: number): void {
    this.due.report(attempt.claim, attempt.token, outcome, now);
  }

  /** When a backoff or the refusal spacing next lets an applier be due. */
  dueAt(now: number): number | undefined {
    return this.known === null ? undefined : this.due.wakeAt(this.appliers(), now);
  }

  /** Whether an applier of `claim` has an attempt out or a reason other than an adopt pending. */
  ahead(claim: NamespacedName): boolean {
    return this.due.ahead(claim);
  }

  private appliers(): Applier[] {
    const appliers = this.hooks.appliers();
    for (const applier of appliers) {
      this.due.noticeNamed(applier);
      const key = `${applier.claim.namespace}/${applier.claim.name}`;
      if (this.restored.has(key)) continue;
      this.restored.add(key);
      const last = this.hooks.lastApplied?.(applier.claim);
      if (last) this.due.restore(applier, last);
    }
    return appliers;
  }

  private raise(targetKey: string, reason: Reason, consents: (onRefusal?: string) => boolean = () => true) {
    for (const applier of this.appliers()) {
      for (const t of applier.targets) {
        if (`${t.ref.namespace}/${t.ref.name}` === targetKey && consents(t.onRefusal))
          this.due.raise(applier, t.uid, reason);
      }
    }
  }
}
