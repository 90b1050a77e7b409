// What every applier's dispatcher shares (applier-claims.md, "One operation, every reason"): one
// attempt of a branch worker, carried out and never retried (the worker decides every retry),
// recorded on the claim's status.operation before the write that starts it and moved through
// its phases until the applier's own status proves it ended. A kind's dispatcher adds how its
// applier is asked and followed: a Flux Kustomization resumed and suspended again, an Argo CD
// Application given a pinned sync.
import type { KubeConfig } from "@kubernetes/client-node";
import type {
  ApplyOperation,
  ArgoCDClaim,
  FluxClaim,
  GitTarget,
  WebhookClaim,
} from "../../../generated/v1alpha3/index.ts";
import { statusCodeOf, type ResourceClient } from "../../kube/resourceclient.ts";
import type { Runnable } from "../../operator/manager.ts";
import { untilAborted } from "../../timing/sleep.ts";
import {
  inFlight,
  newToken,
  precedence,
  type Attempt,
  type Outcome,
  type Reason,
  type Recovery,
} from "../decide/index.ts";
import type { Following } from "../claim/index.ts";
import type { ClaimKind } from "../../types/claims.ts";
import { errorText } from "../../telemetry/errortext.ts";

/** How an attempt ended, as the claim's Events and the metrics name it. */
export type Ended =
  "Succeeded" | "Failed" | "RequestFailed" | "Rejected" | "Dropped" | "Stale" | "Unresolved";

/** A claim whose applier lives in a cluster a KubeProvider reaches. */
export type AnyClaim = FluxClaim | ArgoCDClaim;

/** Every claim a dispatcher carries attempts out for. */
export type DispatchedClaim = AnyClaim | WebhookClaim;

export interface DispatchReport {
  claim: DispatchedClaim;
  reason: Reason | undefined;
  commit: string;
  ended: Ended;
  message: string;
  /** Milliseconds from the record to the end, for an attempt that started an apply. */
  durationMs?: number;
  /** Applied, but not the commit asked for: the source moved on (the residual race). */
  mismatch?: boolean;
  /**
   * The applier's source fetched another commit than the one asked for (a mismatch, or a
   * RequestFailed for it): a hint, never a fact, that the remote moved (applier-claims.md,
   * "Learning about pushes"); the worker looks at it as it looks at a push notice.
   */
  sourceMoved?: boolean;
  /** An operation a stopped process left in flight, followed to its end by this one. */
  recovered?: boolean;
  /** The process stopped while it followed the operation: the next one ends it, so no Warning. */
  stopped?: boolean;
}

export interface DispatcherOptions<C extends DispatchedClaim> {
  claims: ResourceClient<C>;
  targets: ResourceClient<GitTarget>;
  /** The connection to the claim's applier cluster: its KubeProvider's source context. */
  clusterOf(claim: C): KubeConfig | undefined;
  /** The field manager the claim holds its applier under. */
  fieldManager: string;
  /** The field manager status.operation is written under. */
  operationManager: string;
  /** Where the operations this dispatcher follows are known, for the claim's reconciler. */
  following: Following;
  /** Called once per attempt with how it ended. */
  onEnded?: (report: DispatchReport) => void;
  /** Called when an operation is recorded, just before the write that starts it. */
  onRequested?: (claim: C, operation: ApplyOperation) => void;
  /** Called when an operation runs past its budget and is still followed. */
  onUnresolved?: (claim: C, operation: ApplyOperation) => void;
  /** How long an apply may run before it is Unresolved: 5 minutes. */
  budgetMs?: number;
  /** How often the applier is read while an operation is followed: 250 ms. */
  pollMs?: number;
}

/** The branch an attempt is for, and whether its commit is still that branch's tip. */
export interface BranchAsked {
  url: string;
  branch: string;
  current: () => boolean;
}

/** How the steps of a follow ended, when they ran to the applier's own answer. */
export type Proved =
  { kind: "succeeded"; message: string; mismatch?: boolean } | { kind: "failed"; message: string };

/** One attempt's decision no longer holds, or cannot be carried out: how it ends, and why. */
export class Ending extends Error {
  constructor(
    readonly ended: Ended,
    message: string,
    /** The applier's source fetched another commit than the one asked for. */
    readonly sourceMoved = false,
  ) {
    super(message);
  }
}

const outcomeOf: Record<Ended, Outcome["kind"]> = {
  Succeeded: "succeeded",
  Failed: "failed",
  RequestFailed: "failed",
  Unresolved: "failed",
  Rejected: "rejected",
  Dropped: "dropped",
  Stale: "stale",
};

/** The targets of an attempt that still hold its reason: the same incarnation, naming the claim, consenting. */
export function stillAsking(attempt: Attempt, targets: (GitTarget | undefined)[]): Attempt["targets"] {
  return attempt.targets.filter((t, i) => {
    const target = targets[i];
    if (!target || target.metadata.uid !== t.uid || target.metadata.deletionTimestamp) return false;
    const ref = target.spec.applierClaimRef;
    if (ref?.kind !== attempt.claim.kind || ref.name !== attempt.claim.name) return false;
    return t.reason !== "Refusal" || target.spec.onRefusal === "Reapply";
  });
}

/**
 * A dispatcher of one claim kind: a manager runnable, so a stop ends every follow in flight (each
 * kind says what its applier needs then), and an operation recovered before it starts (leads)
 * waits for it.
 */
export abstract class Dispatcher<C extends DispatchedClaim> implements Runnable {
  abstract readonly name: string;
  /** The claims this dispatcher carries attempts out for. */
  protected abstract readonly kind: ClaimKind;
  readonly needLeaderElection = true;
  protected readonly stopping = new AbortController();
  private readonly runs = new Set<Promise<unknown>>();
  private started!: () => void;
  private readonly whenStarted = new Promise<void>((resolve) => (this.started = resolve));

  constructor(protected readonly options: DispatcherOptions<C>) {}

  async start(signal: AbortSignal): Promise<void> {
    this.started();
    await untilAborted(signal);
    this.stopping.abort();
    await Promise.allSettled([...this.runs]);
  }

  /**
   * Carries out one attempt for a branch; `current` says whether its commit is still the tip. A
   * claim gone or going drops it.
   */
  async dispatch(
    branch: { url: string; branch: string },
    attempt: Attempt,
    current: () => boolean,
  ): Promise<Outcome> {
    const claim = await this.options.claims.get(attempt.claim.namespace, attempt.claim.name);
    if (!claim || claim.metadata.deletionTimestamp) return { kind: "dropped" };
    if (this.stopping.signal.aborted) return { kind: "failed" };
    return this.track(this.attempted(claim, attempt, { ...branch, current }));
  }

  /** The follow of one attempt, by the kind's rules: it starts its operation. */
  protected abstract attempted(claim: C, attempt: Attempt, branch: BranchAsked): Follow<C>;

  /**
   * Follows the operation a claim's status records in flight, when no attempt of this process
   * follows it: one a stopped process left behind. It asks the applier for nothing.
   */
  recover(claim: C): Recovery | undefined {
    const operation = claim.status?.operation;
    const token = operation?.requestToken;
    if (!operation || !inFlight(operation) || !token || !operation.commit) return undefined;
    if (this.options.following.has(token)) return undefined;
    // Followed from now, so the claim's reconciler leaves it to this follow.
    this.options.following.follow(token);
    const { namespace, name } = claim.metadata;
    const attempt = {
      claim: { kind: this.kind, namespace: namespace!, name: name! },
      commit: operation.commit,
      token,
      targets: [],
    };
    const follow = this.recovered(claim, attempt, operation);
    const begin = Promise.race([this.whenStarted, untilAborted(this.stopping.signal)]);
    return {
      token,
      commit: operation.commit,
      sentAt: Date.parse(operation.requestedAt ?? "") || Date.now(),
      outcome: begin.then(() => this.track(follow)),
    };
  }

  /** The follow of a recovered operation, by the kind's rules. */
  protected abstract recovered(claim: C, attempt: Attempt, operation: ApplyOperation): Follow<C>;

  /** Carries a follow out, tracked so a stop waits for it, and reports how it ended. */
  protected async track(follow: Follow<C>): Promise<Outcome> {
    const carried = follow.carryOut().finally(() => follow.unfollow());
    this.runs.add(carried);
    const report = await carried.finally(() => this.runs.delete(carried));
    this.options.onEnded?.(report);
    const kind = outcomeOf[report.ended];
    const moved = report.sourceMoved ? { remoteMoved: true as const } : {};
    if (kind === "succeeded") return { kind, commit: report.commit, ...moved };
    return kind === "failed" ? { kind, ...moved } : { kind };
  }
}

/**
 * Following one operation, from the record to the applier's proof that it ended: the records
 * on the claim, and the checks every kind makes. A kind's attempt starts its operation; its
 * recovery follows one a stopped process started.
 */
export abstract class Follow<C extends DispatchedClaim> {
  protected reason: Reason | undefined;
  protected operation: ApplyOperation | undefined;
  protected recordedAt = 0;
  /** What status.operation held before this attempt's record. */
  protected previous: ApplyOperation | undefined;
  /** The request token this process follows, from just before its record is written. */
  protected followed: string | undefined;
  /** A recovery: the operation a stopped process recorded is followed, not started. */
  private readonly recovering: boolean;

  constructor(
    protected readonly options: DispatcherOptions<C>,
    protected claim: C,
    protected readonly attempt: Attempt,
    protected readonly stop: AbortSignal,
    /** The operation a stopped process recorded, for a recovery. */
    recovered?: ApplyOperation,
  ) {
    this.recovering = recovered !== undefined;
    if (recovered) {
      this.operation = recovered;
      this.reason = recovered.reason;
      this.followed = recovered.requestToken;
      this.recordedAt = Date.parse(recovered.requestedAt ?? "") || Date.now();
    }
  }

  protected abstract steps(): Promise<Proved>;

  /** What the applier needs when the process stops in the middle of this follow. */
  protected async onStop(): Promise<void> {}

  /** The operation is no longer this process's to follow. */
  unfollow(): void {
    if (this.followed) this.options.following.done(this.followed);
  }

  async carryOut(): Promise<DispatchReport> {
    try {
      const proved = await this.steps();
      const ended = proved.kind === "succeeded" ? "Succeeded" : "Failed";
      return this.report(ended, proved.message, proved.kind === "succeeded" && proved.mismatch === true);
    } catch (err) {
      const ending = err instanceof Ending ? err : new Ending("Failed", errorText(err));
      if (this.stop.aborted) await this.onStop();
      // Recorded and never started (Stale, a refused request): put back what the status held.
      if (this.operation?.phase === "Requested") await this.withdraw(ending.message);
      const report = this.report(ending.ended, ending.message, false, ending.sourceMoved);
      return this.stop.aborted ? { ...report, stopped: true } : report;
    }
  }

  /** A mismatch is the source having moved too. */
  private report(ended: Ended, message: string, mismatch = false, sourceMoved = mismatch): DispatchReport {
    return {
      claim: this.claim,
      reason: this.reason,
      commit: this.attempt.commit,
      ended,
      message,
      ...(this.recordedAt ? { durationMs: Date.now() - this.recordedAt } : {}),
      ...(mismatch ? { mismatch } : {}),
      ...(sourceMoved ? { sourceMoved } : {}),
      ...(this.recovering ? { recovered: true } : {}),
    };
  }

  /**
   * Records the operation, phase Requested with a fresh request token, before the write that
   * starts it (what the status held before is kept, to put back if nothing starts): the token.
   */
  protected async recordRequested(): Promise<string> {
    this.previous = this.claim.status?.operation;
    await this.record({
      phase: "Requested",
      requestToken: newToken(new Date()),
      ...(this.reason ? { reason: this.reason } : {}),
      commit: this.attempt.commit,
      requestedAt: new Date().toISOString(),
    });
    this.options.onRequested?.(this.claim, this.operation!);
    return this.operation!.requestToken!;
  }

  /** Re-reads each target; with none still holding the attempt's reason, nothing is asked. */
  protected async recheckTargets(): Promise<void> {
    const targets = await Promise.all(
      this.attempt.targets.map((t) => this.options.targets.get(t.ref.namespace, t.ref.name)),
    );
    const still = stillAsking(this.attempt, targets);
    if (still.length === 0) throw new Ending("Dropped", "No GitTarget still holds the request's reason.");
    this.reason = precedence.find((r) => still.some((t) => t.reason === r));
  }

  /** The claim must hold its applier, with no operation in flight. */
  protected checkClaim(holds: (claim: C) => boolean, applier: string): void {
    if (!holds(this.claim)) {
      const inControl = this.claim.status?.conditions?.find((c) => c.type === "InControl");
      throw new Ending(
        "RequestFailed",
        `The claim does not hold its ${applier} (${inControl?.reason ?? "no InControl"}).`,
      );
    }
    if (this.claim.status?.operation && inFlight(this.claim.status.operation))
      throw new Ending("RequestFailed", "Another operation is in flight on the claim.");
  }

  protected stopped(): void {
    if (this.stop.aborted) throw new Ending("Failed", "The operator stopped while this apply ran.");
  }

  /** Ends a follow while the claim is deleted under it. */
  protected async claimStillThere(): Promise<void> {
    const claim = await this.options.claims.get(this.claim.metadata.namespace, this.claim.metadata.name!);
    if (!claim || claim.metadata.deletionTimestamp)
      throw new Ending("Failed", "The claim was deleted while its apply was followed.");
  }

  /**
   * A record that started nothing is withdrawn: the status holds again what it held before, so
   * the claim never shows an operation nothing could have applied; with nothing before, it ends
   * Failed saying why.
   */
  private async withdraw(message: string): Promise<void> {
    const before = this.previous;
    if (before) await this.record(before).catch(() => undefined);
    else await this.complete("Failed", `Withdrawn before it started: ${message}`).catch(() => undefined);
  }

  protected async complete(phase: "Succeeded" | "Failed", message: string): Promise<void> {
    await this.record({
      ...this.operation!,
      phase,
      completedAt: new Date().toISOString(),
      message: message.slice(0, 4096),
    });
  }

  protected async completeWith(proved: Proved): Promise<Proved> {
    await this.complete(proved.kind === "succeeded" ? "Succeeded" : "Failed", proved.message);
    return proved;
  }

  /**
   * Writes the operation to the claim's status, onto the version read; a conflict reads the
   * claim again and writes again, up to five times. The first record is refused while the claim
   * is being deleted or holds another operation in flight.
   */
  protected async record(operation: ApplyOperation): Promise<void> {
    const { claims, operationManager } = this.options;
    for (let attempt = 1; ; attempt++) {
      const { namespace, name, resourceVersion } = this.claim.metadata;
      // Followed from before the record lands, so the claim's reconciler never finds it unfollowed.
      if (operation.requestToken) {
        this.followed = operation.requestToken;
        this.options.following.follow(operation.requestToken);
      }
      try {
        this.claim = await claims.applyStatus(
          { metadata: { namespace, name, resourceVersion }, status: { operation } } as C,
          operationManager,
        );
        this.operation = operation;
        if (!this.recordedAt) this.recordedAt = Date.now();
        return;
      } catch (err) {
        if (statusCodeOf(err) !== 409 || attempt >= 5) throw err;
        const fresh = await claims.get(namespace, name!);
        if (!fresh || fresh.metadata.deletionTimestamp)
          throw new Ending("Dropped", "The claim is being deleted.");
        const theirs = fresh.status?.operation;
        if (!this.operation && theirs && inFlight(theirs))
          throw new Ending("RequestFailed", "Another operation is in flight on the claim.");
        this.claim = fresh;
        // The applier reported this operation's end before this phase's write landed (a tool
        // that works inside the request): its end stands, never overwritten by an earlier phase.
        if (
          this.operation &&
          theirs &&
          theirs.requestToken === this.operation.requestToken &&
          !inFlight(theirs)
        ) {
          this.operation = theirs;
          return;
        }
      }
    }
  }
}
