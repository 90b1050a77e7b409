// A branch worker's side of applying (applier-claims.md, "The design, as built"): every
// observation of the remote passes here, the worker asks once per wake whether an apply is due,
// flushes before it sends, and hands each attempt to the dispatcher, whose report comes back
// through the worker's queue. What is due is decided by internal/applier/decide/due.ts; this file only
// feeds it what the worker sees and carries its answers out.
import { randomBytes } from "node:crypto";
import {
  ApplyDue,
  StaleSnapshots,
  judgeWrite,
  type Applier,
  type Attempt,
  type Outcome,
  type Reason,
  type Recovery,
  type WriteVerdict,
} from "../../applier/decide/index.ts";
import type { Overridden } from "../folder/threeway.ts";
import type { CollectedWhile, FieldsEntry } from "../../types/applied.ts";
import { identityKeyOf, type ResourceIdentity } from "../../types/identity.ts";
import type { Logger } from "../../telemetry/logger.ts";
import { claimKey, type ClaimRef } from "../../types/claims.ts";
import { parseKey, type NamespacedName } from "../../types/names.ts";
import { errorText } from "../../telemetry/errortext.ts";

/** The branch an attempt applies, as the dispatcher names it to the applier. */
export interface AppliedBranch {
  /** The GitBranch, as namespace/name. */
  key: string;
  url: string;
  branch: string;
}

/**
 * How the process applies: the one interface from the claims' rooms to every branch worker,
 * implemented once for the process (controllers/applies.ts). How an attempt is carried out,
 * what the claims' statuses say, and who hears what the apply window and the snapshots judged.
 * Every method names the branch, claim or GitTarget it is about, so one implementation serves
 * every worker.
 */
export interface Applies {
  /**
   * Carries one attempt out for the branch, through the claim's applier, and never retries: the
   * worker decides every retry. `current` says whether the attempt's commit is still the tip the
   * worker published.
   */
  dispatch(branch: AppliedBranch, attempt: Attempt, current: () => boolean): Promise<Outcome>;
  /** Whether a claim holds its applier (InControl): only then is it asked for anything. */
  holds(claim: ClaimRef): boolean;
  /** Whether every collection of a GitTarget has a settled snapshot. */
  snapshotsSettled(target: NamespacedName): boolean;
  /** The source a claim's applier reads, as its claim last reported it: appliers sharing one take turns. */
  sourceOf(claim: ClaimRef): string | undefined;
  /** The field managers a claim's applier writes as, for the apply window. */
  managersOf(claim: ClaimRef): readonly string[];
  /** The commit an applier's last succeeded operation applied, as its claim's status records it. */
  lastApplied(claim: ClaimRef): string | undefined;
  /**
   * Follows an operation a stopped process left in flight on a claim, read back once when a
   * worker first lists the claim; undefined when there is none.
   */
  recover?(claim: ClaimRef): Recovery | undefined;
  /** Whether a claim's status says a Repair is pending, read back once when a worker starts. */
  repairPendingAtStart?(claim: ClaimRef): boolean;
  /** A Repair became pending for a claim, or was answered: its status.repairPending. */
  repairPending?(claim: ClaimRef, pending: boolean): void;
  /** A first snapshot's commit wrote live values over what commits pushed meanwhile changed. */
  pushedChangeOverridden?(claim: ClaimRef, report: OverrideReport): void;
  /** A snapshot for a GitTarget's folder discarded while Git is ahead, or used when its hold ran out. */
  staleSnapshot?(target: NamespacedName, outcome: "discarded" | "used"): void;
  /** How the apply window judged a live write to an applier's folder, for its metrics, log and Events. */
  judged?(claim: ClaimRef, verdict: WriteVerdict, write: JudgedWrite): void;
}

/** One worker's applies: the process's, for its branch, and the appliers its GitTargets name. */
export interface BranchApplies {
  applies: Applies;
  branch: AppliedBranch;
  /** Every claim an attached GitTarget names, with the targets it covers (the worker manager lists them). */
  appliers(): Applier[];
}

/** What a first snapshot's commit overrode: the objects, each with the pushed commits whose change it wrote over. */
export interface OverrideReport {
  /** The GitTarget (namespace/name). */
  target: string;
  /** The snapshot's commit: reverting it brings the pushed changes back. */
  commit: string;
  objects: readonly Overridden[];
}

/** A live write as the watch saw it: its managedFields, and its writer where the watch's order proved it. */
export interface LiveWrite {
  writers?: readonly FieldsEntry[];
  writer?: string;
}

/** A write the apply window did not simply mirror as an edit, for the metrics, the log and the tie's Warning. */
export interface JudgedWrite {
  /** The GitTarget whose folder the object is in (namespace/name). */
  target: string;
  /** The object's identity key. */
  object: string;
  /** Its managedFields, field paths included where the writer was not known. */
  writers?: readonly FieldsEntry[] | undefined;
}

/** How long a window stays open after its operation completed: the applier's writes reach the watch late. */
export const windowGraceMs = 10_000;

/** An applier's apply windows: the attempts out, by token, and those in their grace. */
interface Windows {
  open: Map<string, number>;
  carried: { sentAt: number; until: number }[];
  /** API edits seen in the window since the last flush began, by object: when each was written. */
  edited: Map<string, number>;
  /**
   * Edits from before the last flush: that flush published them, so the apply it made holds
   * them; they guard only against an applier write made before that apply was sent.
   */
  carriedEdits: Map<string, number>;
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
  /** Per claim (claimKey): the repairPending last published. */
  private readonly repairs = new Map<string, boolean>();
  /** Per claim (claimKey): its apply windows. */
  private readonly windows = new Map<string, Windows>();
  /** When the flush under way began: edits from then on are recorded for the apply it makes. */
  private flushedAt: number | undefined;
  /** The apply epoch: raised at every send of an attempt and every end of one. */
  private epoch = 0;
  /** The snapshots held while Git is ahead, and which GitTargets' collections have settled one. */
  private readonly stale = new StaleSnapshots();
  /** What the debug log last said keeps pending applies waiting. */
  private lastWaiting = "";

  /** The process's applies. */
  private readonly hooks: Applies;

  constructor(
    private readonly of: BranchApplies,
    private readonly logger: Logger,
    /** Carries an attempt's end back to the worker's loop. */
    private readonly report: (report: AttemptReport) => void,
  ) {
    this.hooks = of.applies;
  }

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
    const appliers = this.appliers();
    if (this.known === null) this.due.observe(appliers, false);
    this.due.observe(appliers, true);
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
   * refusal was of an edit to a document the folder holds (reapplying the tip reverts it). Git
   * never took the edit, so it guards nothing in the window: the apply that reverts it is meant.
   */
  refused(targetKey: string, identity: ResourceIdentity, reason: string): void {
    const claim = this.claimOf(targetKey);
    if (claim) {
      const windows = this.windowsOf(claim);
      windows.edited.delete(identityKeyOf(identity));
      windows.carriedEdits.delete(identityKeyOf(identity));
    }
    if (!reappliable.has(reason)) return;
    this.raise(targetKey, "Refusal", (onRefusal) => onRefusal === "Reapply");
  }

  /** The next step of applying on this wake; `held` (a CommitRequest, an outage) holds every send. */
  next(now: number, facts: { tip: string | undefined; trusted: boolean; pending: number; held: boolean }) {
    if (this.known === null || facts.held) return undefined;
    const appliers = this.appliers();
    if (this.mark === undefined) {
      if (!this.due.wants(appliers, this.known, now)) return undefined;
      this.mark = Infinity;
      this.flushedAt = now;
      for (const windows of this.windows.values()) {
        for (const [key, at] of windows.edited) windows.carriedEdits.set(key, at);
        windows.edited.clear();
      }
      return { kind: "flush" } as const;
    }
    if (this.mark === Infinity) this.mark = facts.pending;
    if (this.mark > 0 && facts.pending > 0) return { kind: "publish" } as const;
    if (!facts.trusted) return { kind: "prove" } as const;
    this.mark = undefined;
    this.flushedAt = undefined;
    return facts.tip === undefined ? undefined : ({ kind: "send", tip: facts.tip } as const);
  }

  /** Sends every attempt due at `tip`; each report comes back through the worker's loop. */
  send(tip: string, now: number, current: (commit: string) => boolean) {
    for (const attempt of this.due.due(this.appliers(), tip, now)) {
      this.epoch += 1;
      this.windowsOf(attempt.claim).open.set(attempt.token, now);
      this.logger.info("asking an applier to apply", {
        claim: claimKey(attempt.claim),
        commit: attempt.commit,
        reasons: attempt.targets.map((t) => t.reason),
      });
      void this.hooks
        .dispatch(this.of.branch, attempt, () => current(attempt.commit))
        .catch((err: unknown): Outcome => {
          this.logger.error("an apply attempt failed", { error: errorText(err) });
          return { kind: "failed" };
        })
        .then((outcome) => this.report({ attempt, outcome }));
    }
  }

  /** An attempt's end, handled on the worker's loop. */
  reported({ attempt, outcome }: AttemptReport, now: number): void {
    this.epoch += 1;
    this.due.report(attempt.claim, attempt.token, outcome, now);
    this.publishRepair(attempt.claim);
    const windows = this.windowsOf(attempt.claim);
    const sentAt = windows.open.get(attempt.token);
    windows.open.delete(attempt.token);
    if (sentAt !== undefined) windows.carried.push({ sentAt, until: now + windowGraceMs });
  }

  /**
   * The apply window (applier-claims.md): whether a live write to a target's folder is mirrored.
   * The applier's own write of what it applies (its echo) is not, and neither is its late write
   * over a newer API edit, which makes a Repair due instead; everything that could be the edit
   * itself is. A DELETE carries nothing about its deleter and is always an edit.
   */
  admits(targetKey: string, identity: ResourceIdentity, write: LiveWrite, now: number) {
    const { writers, writer } = write;
    const claim = this.claimOf(targetKey);
    if (!claim) return true;
    const windows = this.windowsOf(claim);
    windows.carried = windows.carried.filter((w) => w.until > now);
    const sends = [...windows.open.values(), ...windows.carried.map((w) => w.sentAt)];
    const open = sends.length > 0 || this.flushedAt !== undefined;
    if (!open) {
      windows.edited.clear();
      windows.carriedEdits.clear();
    }
    const key = identityKeyOf(identity);
    // A carried edit is in the commit the latest attempt applies: a write since that send is
    // this attempt's own apply, never a late one over the edit, whether or not the attempt has
    // reported by the time its write is judged (attribution holds an event until its author is known).
    const carried = windows.carriedEdits.get(key);
    const latestSend = sends.length > 0 ? Math.max(...sends) : undefined;
    const writtenAt = writeTime(write, now);
    const beforeSend = latestSend === undefined || seconds(writtenAt) < seconds(latestSend);
    const editedAt = windows.edited.get(key) ?? (beforeSend ? carried : undefined);
    const verdict = judgeWrite(writers ?? [], {
      managers: this.hooks.managersOf(claim),
      ...(sends.length > 0 ? { earliestSend: new Date(Math.min(...sends)) } : {}),
      ...(editedAt !== undefined ? { editedAt: new Date(editedAt) } : {}),
      ...(writer !== undefined ? { writer } : {}),
    });
    if (verdict !== "edit") this.hooks.judged?.(claim, verdict, { target: targetKey, object: key, writers });
    if ((verdict === "edit" || verdict === "ambiguous") && open) windows.edited.set(key, writtenAt);
    if (verdict === "withheld") {
      this.raise(targetKey, "Repair");
      this.publishRepair(claim);
    }
    return verdict !== "echo" && verdict !== "withheld";
  }

  /** When a backoff or the refusal spacing next lets an applier be due, or a held GitTarget's limit runs out. */
  dueAt(now: number): number | undefined {
    const appliers = this.appliers();
    const times = [this.known === null ? undefined : this.due.wakeAt(appliers, now), this.stale.dueAt()];
    this.traceWaiting(appliers, now);
    const due = times.filter((t): t is number => t !== undefined);
    return due.length > 0 ? Math.min(...due) : undefined;
  }

  /** Logs (debug) what keeps pending applies from being asked, each time that changes. */
  private traceWaiting(appliers: Applier[], now: number): void {
    const waiting = this.due.waiting(appliers, now);
    const summary = waiting.join("; ");
    if (summary === this.lastWaiting) return;
    this.lastWaiting = summary;
    if (summary) this.logger.debug("applies pending", { known: this.known ?? "", waiting });
  }

  /**
   * What the watch side reads when a snapshot's collection starts, and the resync request
   * carries: the apply epoch, and whether Git is ahead of the cluster.
   */
  collecting(): CollectedWhile {
    return { epoch: this.epoch, ahead: this.ahead() };
  }

  /**
   * Whether a snapshot for a target's folder is decided (applier-claims.md, "Resyncs while Git is
   * ahead"). A folder no claim applies never waits; nor does a GitTarget's first snapshot of a
   * collection. One collected while Git was ahead, across an apply, or arriving while Git is
   * ahead is discarded, and a fresh one asked for once Git is no longer ahead (`reanchor`).
   */
  snapshot(targetKey: string, collection: string, collected: CollectedWhile | undefined, now: number) {
    if (!this.claimOf(targetKey)) return "use" as const;
    const verdict = this.stale.judge(targetKey, collection, collected, {
      at: now,
      epoch: this.epoch,
      ahead: this.ahead(),
    });
    // Only a snapshot judged stale is reported: a GitTarget's first ("initial") never waited.
    if (verdict === "discard" || verdict === "use_stale")
      this.hooks.staleSnapshot?.(parseKey(targetKey), verdict === "discard" ? "discarded" : "used");
    return verdict;
  }

  /**
   * The base of the three-way rule for a target's first snapshot with an applier: the commit its
   * claim's applier last applied; undefined with no claim, or none applied yet.
   */
  baseOf(targetKey: string): string | undefined {
    const claim = this.claimOf(targetKey);
    return claim && this.due.lastApplied(claim);
  }

  /**
   * A first snapshot's commit wrote live values over pushed changes (an API edit and a Git commit
   * touched the same objects while the operator was down): the API won, and the user is told.
   */
  overridden(targetKey: string, overridden: readonly Overridden[], commit: string): void {
    const claim = this.claimOf(targetKey);
    if (!claim) return;
    this.hooks.pushedChangeOverridden?.(claim, { target: targetKey, commit, objects: overridden });
  }

  /** The GitTargets whose watches to re-anchor now, for a fresh snapshot after the apply. */
  reanchor(now: number): string[] {
    return this.stale.reanchor(now, () => this.ahead());
  }

  /** Whether Git is ahead of the cluster for any applier on the branch. */
  private ahead(): boolean {
    const tip = this.known ?? undefined;
    return this.appliers().some((applier) => this.due.ahead(applier, tip));
  }

  /** A live delete in an applier's folder: always an edit, remembered while a window is open. */
  deleted(targetKey: string, identity: ResourceIdentity, now: number): void {
    const claim = this.claimOf(targetKey);
    if (!claim) return;
    const windows = this.windowsOf(claim);
    const open =
      windows.open.size > 0 || windows.carried.some((w) => w.until > now) || this.flushedAt !== undefined;
    if (open) windows.edited.set(identityKeyOf(identity), now);
  }

  /** Tells the claim's status when its Repair becomes pending or is answered. */
  private publishRepair(claim: ClaimRef): void {
    const key = claimKey(claim);
    const pending = this.due.repairPending(claim);
    if ((this.repairs.get(key) ?? false) === pending) return;
    this.repairs.set(key, pending);
    this.hooks.repairPending?.(claim, pending);
  }

  private claimOf(targetKey: string): ClaimRef | undefined {
    return this.appliers().find((a) =>
      a.targets.some((t) => `${t.ref.namespace}/${t.ref.name}` === targetKey),
    )?.claim;
  }

  private windowsOf(claim: ClaimRef): Windows {
    const key = claimKey(claim);
    let windows = this.windows.get(key);
    if (!windows) {
      windows = { open: new Map(), carried: [], edited: new Map(), carriedEdits: new Map() };
      this.windows.set(key, windows);
    }
    return windows;
  }

  private appliers(): Applier[] {
    const appliers = this.of.appliers();
    for (const applier of appliers) {
      this.due.noticeNamed(applier);
      const key = claimKey(applier.claim);
      if (this.restored.has(key)) continue;
      this.restored.add(key);
      const last = this.hooks.lastApplied?.(applier.claim);
      if (last) this.due.restore(applier, last);
      this.recover(applier);
      // A Repair pending when the last process stopped is due again: the cluster may still run the reverted value.
      const target = applier.targets[0];
      if (target && this.hooks.repairPendingAtStart?.(applier.claim)) {
        this.due.raise(applier, target.uid, "Repair");
        this.repairs.set(key, true);
      }
    }
    return appliers;
  }

  /**
   * An operation the last process left in flight is followed before any live write to the
   * claim's folders is judged: its window is open from its request, and the applier sends
   * nothing until it ends (applier-claims.md, "Restart recovery").
   */
  private recover(applier: Applier): void {
    const recovery = this.hooks.recover?.(applier.claim);
    if (!recovery) return;
    const { token, commit, sentAt } = recovery;
    this.due.recovering(applier, token, commit);
    this.windowsOf(applier.claim).open.set(token, sentAt);
    this.logger.info("following an apply the last process left in flight", {
      claim: claimKey(applier.claim),
      commit,
      token,
    });
    const attempt: Attempt = { claim: applier.claim, commit, token, targets: [] };
    void recovery.outcome
      .catch((err: unknown): Outcome => {
        this.logger.error("following a recovered apply failed", { error: errorText(err) });
        return { kind: "failed" };
      })
      .then((outcome) => this.report({ attempt, outcome }));
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

/**
 * When a write was made: its writer's entry where the watch proved who wrote it, else its newest
 * timed managedFields entry (status aside), else now.
 */
function writeTime({ writers, writer }: LiveWrite, now: number): number {
  const times = (writers ?? [])
    .filter((w) => w.time && w.subresource !== "status" && (writer === undefined || w.manager === writer))
    .map((w) => Date.parse(w.time!));
  return times.length > 0 ? Math.max(...times) : now;
}

const seconds = (ms: number) => Math.floor(ms / 1000);
