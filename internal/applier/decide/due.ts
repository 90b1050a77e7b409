// Which apply is due, per applier, on one branch worker (applier-claims.md, "The design, as
// built"). The worker keeps every reason pending until an operation that succeeded answers it,
// and decides every retry the same way as a first attempt; the dispatcher only carries one
// attempt out. Pure: the worker feeds it observations and reports, and asks it at the end of
// every wake which attempts to send.
import { claimKey, type ClaimRef } from "../../types/claims.ts";
import type { NamespacedName } from "../../types/names.ts";

export type Reason = "ForeignCommit" | "Refusal" | "Repair" | "CatchUp";

/** One reason per target in an attempt, by this precedence. */
export const precedence: readonly Reason[] = ["ForeignCommit", "Repair", "Refusal", "CatchUp"];

/** A Refusal asks at most once a minute per target; one inside that minute is carried by a trailing one. */
export const refusalSpacingMs = 60_000;
const backoffFirstMs = 2_000;
const backoffCapMs = 5 * 60_000;
const afterRejectionMs = 15_000;

/** What an applier covers: the GitTargets (by uid) that name its claim, on this branch. */
export interface Covered {
  uid: string;
  ref: NamespacedName;
  /** Every collection has a settled snapshot and its resyncs are published. */
  published: boolean;
  /** spec.onRefusal: a Refusal is raised only for a target that says Reapply. */
  onRefusal?: string;
}

export interface Applier {
  claim: ClaimRef;
  /** The source it reads (cluster and GitRepository): appliers sharing one take turns. */
  source: string;
  /**
   * Whether its claim holds it (InControl) now; false while the claim adopts it or waits for a
   * suspend to be handled: its reasons stay pending, and it is asked once it is held.
   */
  holds?: boolean;
  targets: readonly Covered[];
}

// A converge is a CatchUp that an applier already at the tip does not need; an adopt is one that
// it does (applying the same commit again is what stamps the owner labels on a new object).
type Pend = Reason | "Converge";

interface ApplierState {
  /** Per target uid, what is pending for it. */
  pending: Map<string, Set<Pend>>;
  /** The attempt out, with what it carried away; a recovered operation carries nothing. */
  out?: { token: string; commit: string; carried: Map<string, Set<Pend>>; recovered?: boolean };
  failures: number;
  notBefore: number;
  lastApplied?: string;
  lastTurnAt: number;
  refusalSentAt: Map<string, number>;
}

export interface Attempt {
  claim: ClaimRef;
  commit: string;
  token: string;
  targets: { uid: string; ref: NamespacedName; reason: Reason }[];
}

export type Outcome =
  | { kind: "succeeded"; commit: string; remoteMoved?: true }
  | { kind: "stale" }
  /**
   * `remoteMoved`: the applier's source fetched another commit than the one asked for, so the
   * remote may hold a commit the worker has not seen; it is looked at as a push notice is.
   */
  | { kind: "failed"; remoteMoved?: true }
  | { kind: "rejected" }
  /** No target still held the attempt's reason: nothing was asked, and nothing is given back. */
  | { kind: "dropped" };

/**
 * An operation a stopped process left in flight, followed by this one (applier-claims.md,
 * "Restart recovery"): its apply window opens from when it was requested, and its outcome
 * comes back like an attempt's, though it answers no reason of this process.
 */
export interface Recovery {
  token: string;
  commit: string;
  /** When the operation was requested: its apply window opens from then. */
  sentAt: number;
  outcome: Promise<Outcome>;
}

export class ApplyDue {
  private readonly appliers = new Map<string, ApplierState>();
  private observed = false;
  private readonly named = new Set<string>();

  constructor(private readonly newToken: () => string) {}

  /**
   * One observation of the remote tip; every one passes here. The first after a start is a
   * baseline: a converge is pending for every applier, never a ForeignCommit, since an apply on
   * startup would revert edits made while the operator was down. A tip the worker pushed leaves
   * nothing pending; any other is a ForeignCommit for every applier on the branch.
   */
  observe(appliers: readonly Applier[], pushedByUs: boolean): void {
    const baseline = !this.observed;
    this.observed = true;
    for (const applier of appliers) {
      const reason = baseline ? "Converge" : pushedByUs ? undefined : "ForeignCommit";
      if (reason) for (const t of applier.targets) this.add(applier, t.uid, reason);
    }
  }

  /**
   * A GitTarget that names an applier for the first time, by uid (a target deleted and
   * re-created is a new one), converges it once: a commit observed before it was named was
   * pending for nobody.
   */
  noticeNamed(applier: Applier): void {
    for (const t of applier.targets) {
      const key = `${claimKey(applier.claim)}#${t.uid}`;
      if (this.named.has(key)) continue;
      this.named.add(key);
      this.add(applier, t.uid, "Converge");
    }
  }

  /** A reason for one target's applier: an adopt (CatchUp), a Refusal, or a Repair. */
  raise(applier: Applier, targetUid: string, reason: Reason): void {
    this.add(applier, targetUid, reason);
  }

  /** The commit an applier last applied, as its claim's status recorded it before a restart. */
  restore(applier: Applier, lastApplied: string): void {
    this.state(applier).lastApplied = lastApplied;
  }

  /**
   * An operation a stopped process left in flight, followed by this one: it is out like an
   * attempt, so neither this applier nor another of its source is sent anything until it ends,
   * but it answers no reason, and its failure starts no backoff (applier-claims.md, "Restart
   * recovery": a recovered operation decides nothing about which apply is due).
   */
  recovering(applier: Applier, token: string, commit: string): void {
    this.state(applier).out = { token, commit, carried: new Map(), recovered: true };
  }

  /**
   * The attempts due now, one per applier at most, for `tip` (undefined: the remote has no
   * branch, which asks nothing). An applier is due with a reason pending, no attempt out, no
   * other applier of its source out, past its backoff, and once every target it covers has
   * published its initial snapshots. Appliers sharing a source take turns, oldest turn first.
   */
  due(appliers: readonly Applier[], tip: string | undefined, now: number): Attempt[] {
    if (tip === undefined) return [];
    const busy = new Set(appliers.filter((a) => this.state(a).out).map((a) => a.source));
    const ready = appliers
      .filter((a) => !busy.has(a.source) && this.ready(a, tip, now))
      .sort((a, b) => this.state(a).lastTurnAt - this.state(b).lastTurnAt);
    const attempts: Attempt[] = [];
    for (const applier of ready) {
      if (busy.has(applier.source)) continue;
      busy.add(applier.source);
      attempts.push(this.send(applier, tip, now));
    }
    return attempts;
  }

  /** Whether `due` would send an attempt now: what makes the worker flush first. */
  wants(appliers: readonly Applier[], tip: string | undefined, now: number): boolean {
    if (tip === undefined) return false;
    const busy = new Set(appliers.filter((a) => this.state(a).out).map((a) => a.source));
    return appliers.some((a) => !busy.has(a.source) && this.ready(a, tip, now));
  }

  /**
   * When an applier with a reason pending and no attempt out is next let through: its backoff's
   * end, or a Refusal's minute; undefined when nothing waits on time.
   */
  wakeAt(appliers: readonly Applier[], now: number): number | undefined {
    let at: number | undefined;
    const later = (t: number) => {
      if (t > now) at = Math.min(at ?? t, t);
    };
    for (const applier of appliers) {
      const state = this.appliers.get(claimKey(applier.claim));
      if (!state || state.out || state.pending.size === 0) continue;
      // Not held yet: looked at again in a second, since nothing on the branch says when it is.
      if (applier.holds === false) later(now + 1_000);
      later(state.notBefore);
      for (const uid of state.pending.keys())
        later((state.refusalSentAt.get(uid) ?? -Infinity) + refusalSpacingMs);
    }
    return at;
  }

  /**
   * What the dispatcher reported of an attempt. A success answers what it carried. Anything else
   * gives it back (a Refusal only if it still stands); a stale attempt is decided again at once,
   * any other outcome starts the applier's backoff: 2 s doubling to 5 min, at least 15 s after
   * a rejection.
   */
  report(claim: ClaimRef, token: string, outcome: Outcome, now: number, refusalStands = true): void {
    const state = this.appliers.get(claimKey(claim));
    if (!state?.out || state.out.token !== token) return;
    const { carried, recovered } = state.out;
    delete state.out;
    if (recovered) {
      if (outcome.kind === "succeeded") state.lastApplied = outcome.commit;
      return;
    }
    if (outcome.kind === "succeeded") {
      state.lastApplied = outcome.commit;
      state.failures = 0;
      state.notBefore = 0;
      return;
    }
    if (outcome.kind === "dropped") return;
    for (const [uid, pends] of carried) {
      for (const pend of pends) if (pend !== "Refusal" || refusalStands) this.addTo(state, uid, pend);
    }
    if (outcome.kind === "stale") return;
    const delay = Math.min(backoffCapMs, backoffFirstMs * 2 ** state.failures);
    state.failures += 1;
    state.notBefore = now + (outcome.kind === "rejected" ? Math.max(afterRejectionMs, delay) : delay);
  }

  /** Whether a Repair is pending for an applier, or out with its attempt: the claim's repairPending. */
  repairPending(claim: ClaimRef): boolean {
    const state = this.appliers.get(claimKey(claim));
    if (!state) return false;
    const holds = (pends: Map<string, Set<Pend>>) => [...pends.values()].some((p) => p.has("Repair"));
    return holds(state.pending) || (state.out !== undefined && holds(state.out.carried));
  }

  /**
   * Whether Git is ahead of the cluster for an applier (applier-claims.md, "Resyncs while Git is
   * ahead"): an attempt out, a ForeignCommit, Repair or Refusal pending, or a converge it may be
   * asked for (past the initial-snapshot barrier, and not of the commit it last applied). An
   * adopt does not count: it applies objects the cluster already runs.
   */
  ahead(applier: Applier, tip: string | undefined): boolean {
    const state = this.appliers.get(claimKey(applier.claim));
    if (!state) return false;
    if (state.out !== undefined) return true;
    const converges = applier.targets.every((t) => t.published) && state.lastApplied !== tip;
    return [...state.pending.values()].some((pends) =>
      [...pends].some((p) => p !== "CatchUp" && (p !== "Converge" || converges)),
    );
  }

  /** The commit an applier last applied, as this worker knows it; undefined before any. */
  lastApplied(claim: ClaimRef): string | undefined {
    return this.appliers.get(claimKey(claim))?.lastApplied;
  }

  /**
   * Why each applier with a reason pending is not asked now, for the debug log: an attempt out,
   * its backoff, its claim not holding it, a target not yet published. Empty when none waits.
   */
  waiting(appliers: readonly Applier[], now: number): string[] {
    const lines: string[] = [];
    for (const applier of appliers) {
      const state = this.appliers.get(claimKey(applier.claim));
      if (!state || state.pending.size === 0) continue;
      const pending = [...new Set([...state.pending.values()].flatMap((p) => [...p]))].sort().join("+");
      const why = [
        state.out ? "an attempt out" : undefined,
        now < state.notBefore ? "its backoff" : undefined,
        applier.holds === false ? "not held" : undefined,
        applier.targets.some((t) => !t.published) ? "a target not published" : undefined,
      ].filter(Boolean);
      lines.push(`${claimKey(applier.claim)} ${pending}: ${why.length > 0 ? why.join(", ") : "due"}`);
    }
    return lines;
  }

  /** Forgets an applier no GitTarget on the branch names anymore. */
  forget(claim: ClaimRef): void {
    this.appliers.delete(claimKey(claim));
  }

  private ready(applier: Applier, tip: string, now: number): boolean {
    const state = this.state(applier);
    if (state.out || now < state.notBefore || applier.holds === false) return false;
    if (!applier.targets.every((t) => t.published)) return false;
    // A converge of the commit last applied asks nothing, and is answered.
    if (state.lastApplied === tip) {
      for (const [uid, pends] of state.pending) {
        pends.delete("Converge");
        if (pends.size === 0) state.pending.delete(uid);
      }
    }
    return [...state.pending].some(([uid, pends]) => this.askable(state, uid, pends, now));
  }

  private askable(state: ApplierState, uid: string, pends: Set<Pend>, now: number): boolean {
    if ([...pends].some((p) => p !== "Refusal")) return true;
    return now - (state.refusalSentAt.get(uid) ?? -Infinity) >= refusalSpacingMs;
  }

  private send(applier: Applier, tip: string, now: number): Attempt {
    const state = this.state(applier);
    const carried = new Map<string, Set<Pend>>();
    const targets: Attempt["targets"] = [];
    for (const t of applier.targets) {
      const pends = state.pending.get(t.uid);
      if (!pends || !this.askable(state, t.uid, pends, now)) continue;
      const reasons = new Set([...pends].map((p): Reason => (p === "Converge" ? "CatchUp" : p)));
      if (pends.has("Refusal")) state.refusalSentAt.set(t.uid, now);
      carried.set(t.uid, pends);
      state.pending.delete(t.uid);
      targets.push({ uid: t.uid, ref: t.ref, reason: precedence.find((r) => reasons.has(r))! });
    }
    state.lastTurnAt = now;
    const token = this.newToken();
    state.out = { token, commit: tip, carried };
    return { claim: applier.claim, commit: tip, token, targets };
  }

  private add(applier: Applier, uid: string, pend: Pend): void {
    this.addTo(this.state(applier), uid, pend);
  }

  private addTo(state: ApplierState, uid: string, pend: Pend): void {
    const pends = state.pending.get(uid) ?? new Set<Pend>();
    pends.add(pend);
    state.pending.set(uid, pends);
  }

  private state(applier: Applier): ApplierState {
    const key = claimKey(applier.claim);
    let state = this.appliers.get(key);
    if (!state) {
      state = { pending: new Map(), failures: 0, notBefore: 0, lastTurnAt: 0, refusalSentAt: new Map() };
      this.appliers.set(key, state);
    }
    return state;
  }
}
