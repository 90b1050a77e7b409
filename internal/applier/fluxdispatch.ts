// The Flux dispatcher: one attempt of a branch worker, carried out against a held Kustomization
// (applier-claims.md, "One operation, every reason"), and never a retry of its own: the worker
// decides every retry, after a flush, at the tip as it is then. The attempt re-reads its
// targets, makes the GitRepository's artifact hold the commit, checks once more, records the
// operation on the claim before the write that starts it, resumes with a token, waits for
// that token handled and proof that a reconcile ran, reads the outcome table, suspends again
// and completes once that suspend is handled. Each phase is written to the claim's
// status.operation, so a person (and a later process) sees where it is.
import type { KubeConfig } from "@kubernetes/client-node";
import type { ApplyOperation, FluxClaim, GitTarget } from "../../generated/v1alpha3/index.ts";
import { statusCodeOf, type ResourceClient } from "../kube/resourceclient.ts";
import { sleep, untilAborted } from "../timing/sleep.ts";
import type { Runnable } from "../operator/manager.ts";
import { normalizeRepositoryUrl } from "../types/repourl.ts";
import { keyOf } from "../types/names.ts";
import { precedence, type Attempt, type Outcome, type Reason, type Recovery } from "./due.ts";
import { claimedRef, holdsApplier } from "./fluxclaim.ts";
import { inFlight } from "./operation.ts";
import type { Following } from "./following.ts";
import { FluxClient, newToken } from "./flux/client.ts";
import {
  fluxOutcome,
  revisionHolds,
  type FluxOutcome,
  type RecoveredMark,
  type ResumeMark,
} from "./flux/outcome.ts";
import {
  viewGitRepository,
  viewKustomization,
  type GitRepositoryView,
  type KustomizationView,
} from "./flux/view.ts";

/** How an attempt ended, as the claim's Events and the metrics name it. */
export type Ended =
  "Succeeded" | "Failed" | "RequestFailed" | "Rejected" | "Dropped" | "Stale" | "Unresolved";

export interface DispatchReport {
  claim: FluxClaim;
  reason: Reason | undefined;
  commit: string;
  ended: Ended;
  message: string;
  /** Milliseconds from the record to the end, for an attempt that started an apply. */
  durationMs?: number;
  /** Applied, but the revision the source holds now and not the commit: the residual race. */
  mismatch?: boolean;
  /** An operation a stopped process left in flight, followed to its end by this one. */
  recovered?: boolean;
}

export interface FluxDispatcherOptions {
  claims: ResourceClient<FluxClaim>;
  targets: ResourceClient<GitTarget>;
  /** The connection to the claim's applier cluster: its KubeProvider's source context. */
  clusterOf(claim: FluxClaim): KubeConfig | undefined;
  /** The field manager that holds spec.suspend: the FluxClaim's. */
  fieldManager: string;
  /** The field manager status.operation is written under. */
  operationManager: string;
  /** Where the operations this dispatcher follows are known, for the claim's reconciler. */
  following: Following;
  /** Called once per attempt with how it ended. */
  onEnded?: (report: DispatchReport) => void;
  /** Called when an operation is recorded, just before the resume. */
  onRequested?: (claim: FluxClaim, operation: ApplyOperation) => void;
  /** Called when an operation runs past its budget and is suspended while still followed. */
  onUnresolved?: (claim: FluxClaim, operation: ApplyOperation) => void;
  /** How long an apply may run before it is Unresolved: 5 minutes. */
  budgetMs?: number;
  /** How long the source may take to fetch the commit: 2 minutes. */
  fetchTimeoutMs?: number;
  /** How often Flux's objects are read while a token waits: 250 ms. */
  pollMs?: number;
}

/** One attempt's decision no longer holds, or cannot be carried out: how it ends, and why. */
class Ending extends Error {
  constructor(
    readonly ended: Ended,
    message: string,
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
    if (ref?.kind !== "FluxClaim" || ref.name !== attempt.claim.name) return false;
    return t.reason !== "Refusal" || target.spec.onRefusal === "Reapply";
  });
}

/** Why the Kustomization may not be resumed for this branch, if it may not. */
export function rejection(
  k: KustomizationView,
  repository: GitRepositoryView | undefined,
  branch: { url: string; branch: string },
): string | undefined {
  const name = `Kustomization ${keyOf(k.ref)}`;
  if (k.source.kind !== "GitRepository") return `${name} reads a ${k.source.kind || "source of no kind"}.`;
  if (k.suspendAppliedBy.length > 0)
    return `${name}: field manager ${k.suspendAppliedBy.join(", ")} applies spec.suspend.`;
  if (!repository) return `GitRepository ${keyOf(k.source)} does not exist.`;
  if (
    normalizeRepositoryUrl(repository.url) !== normalizeRepositoryUrl(branch.url) ||
    repository.branch !== branch.branch
  )
    return `GitRepository ${keyOf(k.source)} fetches ${repository.url} ${repository.branch ?? "at a pinned ref"}, not ${branch.url} ${branch.branch}.`;
  return undefined;
}

/** Whether the reconcile that read `token` has ended: it, or a token stamped over it, is handled. */
export function handled(k: KustomizationView, token: string, stampedBefore: string | undefined): boolean {
  if (k.lastHandled === token) return true;
  // Somebody stamped over our token (flux reconcile): the reconcile handling theirs started after ours.
  return k.requestedAt !== token && k.requestedAt !== stampedBefore && k.lastHandled === k.requestedAt;
}

export class FluxDispatcher implements Runnable {
  readonly name = "flux-dispatcher";
  readonly needLeaderElection = true;
  private readonly stopping = new AbortController();
  private readonly runs = new Set<Promise<unknown>>();
  private started!: () => void;
  /** A recovered operation found before the dispatcher starts (leads) waits for it. */
  private readonly whenStarted = new Promise<void>((resolve) => (this.started = resolve));

  constructor(private readonly options: FluxDispatcherOptions) {}

  /**
   * Runs until the process stops; then every attempt in flight stops following, and a
   * Kustomization one of them resumed is suspended once, without waiting for Flux to handle it:
   * the next process recovers the operation (applier-claims.md, "What it costs").
   */
  async start(signal: AbortSignal): Promise<void> {
    this.started();
    await untilAborted(signal);
    this.stopping.abort();
    await Promise.allSettled([...this.runs]);
  }

  /** Carries out one attempt for a branch; `current` says whether its commit is still the tip. */
  async dispatch(
    branch: { url: string; branch: string },
    attempt: Attempt,
    current: () => boolean,
  ): Promise<Outcome> {
    const claim = await this.options.claims.get(attempt.claim.namespace, attempt.claim.name);
    if (!claim || claim.metadata.deletionTimestamp) return { kind: "dropped" };
    if (this.stopping.signal.aborted) return { kind: "failed" };
    return this.track(new Run(this.options, claim, attempt, this.stopping.signal, branch, current));
  }

  /**
   * Follows the operation a claim's status records in flight, when no attempt of this process
   * follows it: one a stopped process left behind. It asks the applier for nothing.
   */
  recover(claim: FluxClaim): Recovery | undefined {
    const operation = claim.status?.operation;
    const token = operation?.requestToken;
    if (!operation || !inFlight(operation) || !token || !operation.commit) return undefined;
    if (this.options.following.has(token)) return undefined;
    // Followed from now, so the claim's reconciler leaves it to this follow.
    this.options.following.follow(token);
    const { namespace, name } = claim.metadata;
    const attempt = {
      claim: { namespace: namespace!, name: name! },
      commit: operation.commit,
      token,
      targets: [],
    };
    const recovered = new Recovered(this.options, claim, attempt, this.stopping.signal, operation);
    const begin = Promise.race([this.whenStarted, untilAborted(this.stopping.signal)]);
    return {
      token,
      commit: operation.commit,
      sentAt: Date.parse(operation.requestedAt ?? "") || Date.now(),
      outcome: begin.then(() => this.track(recovered)),
    };
  }

  /** Carries a follow out, tracked so a stop waits for it, and reports how it ended. */
  private async track(follow: Follow): Promise<Outcome> {
    const carried = follow.carryOut().finally(() => follow.unfollow());
    this.runs.add(carried);
    const report = await carried.finally(() => this.runs.delete(carried));
    this.options.onEnded?.(report);
    const kind = outcomeOf[report.ended];
    return kind === "succeeded" ? { kind, commit: report.commit } : { kind };
  }
}

/**
 * What following one operation takes, from the record to the suspend that ends it: the
 * reads of Flux's objects, the suspends, the records on the claim. An attempt (Run) starts
 * its operation; a recovery (Recovered) follows one a stopped process started.
 */
abstract class Follow {
  protected readonly flux: FluxClient | undefined;
  protected reason: Reason | undefined;
  protected operation: ApplyOperation | undefined;
  protected recordedAt = 0;
  /** What status.operation held before this attempt's record. */
  protected previous: ApplyOperation | undefined;
  /** The request token this process follows, from just before its record is written. */
  protected followed: string | undefined;

  constructor(
    protected readonly options: FluxDispatcherOptions,
    protected claim: FluxClaim,
    protected readonly attempt: Attempt,
    protected readonly stop: AbortSignal,
  ) {
    const kubeConfig = options.clusterOf(claim);
    this.flux = kubeConfig && new FluxClient(kubeConfig, options.fieldManager);
  }

  protected abstract steps(): Promise<FluxOutcome>;

  /** The operation is no longer this process's to follow. */
  unfollow(): void {
    if (this.followed) this.options.following.done(this.followed);
  }

  async carryOut(): Promise<DispatchReport> {
    try {
      const outcome = await this.steps();
      const ended = outcome.kind === "succeeded" ? "Succeeded" : "Failed";
      const message =
        outcome.kind === "succeeded"
          ? `Applied ${outcome.revision}${outcome.mismatch ? ` (asked for ${this.attempt.commit}: the source moved on)` : ""}.`
          : `${outcome.reason}: ${outcome.message}`;
      return this.report(ended, message, outcome.kind === "succeeded" && outcome.mismatch);
    } catch (err) {
      const ending = err instanceof Ending ? err : new Ending("Failed", String(err));
      if (this.stop.aborted) await this.suspendOnStop();
      // Recorded and never started (Stale, a refused resume): put back what the status held.
      if (this.operation?.phase === "Requested") await this.withdraw(ending.message);
      return this.report(ending.ended, ending.message);
    }
  }

  private report(ended: Ended, message: string, mismatch = false): DispatchReport {
    return {
      claim: this.claim,
      reason: this.reason,
      commit: this.attempt.commit,
      ended,
      message,
      ...(this.recordedAt ? { durationMs: Date.now() - this.recordedAt } : {}),
      ...(mismatch ? { mismatch } : {}),
      ...(this instanceof Recovered ? { recovered: true } : {}),
    };
  }

  /**
   * From a resume whose token is on the Kustomization to the operation's end: the reconcile
   * that reads the token followed within the budget (past it: suspended at once, Unresolved,
   * and followed on), the outcome table read, suspended again (Settling), and completed once
   * that suspend is handled.
   */
  protected async followToEnd(
    token: string,
    stampedBefore: string | undefined,
    mark: ResumeMark | RecoveredMark,
  ): Promise<FluxOutcome> {
    const budgetAt = this.recordedAt + (this.options.budgetMs ?? 5 * 60_000);
    let applied = await this.waitFor((v) => handled(v, token, stampedBefore), budgetAt);
    if (!applied) {
      // Past its budget: suspended at once (that stops whatever would follow), and followed on.
      await this.suspendAgain("Unresolved");
      this.options.onUnresolved?.(this.claim, this.operation!);
      applied = await this.waitFor((v) => handled(v, token, stampedBefore), Infinity);
    }
    const repository = await this.repository(applied!);
    const outcome = fluxOutcome(applied!, mark, this.attempt.commit, repository?.revision);
    if (this.operation!.phase !== "Unresolved") await this.suspendAgain("Settling");
    await this.settled();
    await this.completeWith(outcome);
    return outcome;
  }

  /** Waits until the operation's suspend is handled: the Kustomization suspended, every reconcile before it ended. */
  protected async settled(): Promise<void> {
    const suspendToken = this.operation!.suspendToken!;
    await this.waitFor((v) => v.suspended && handled(v, suspendToken, undefined), Infinity);
  }

  protected async completeWith(outcome: FluxOutcome): Promise<void> {
    await this.complete(
      outcome.kind === "succeeded" ? "Succeeded" : "Failed",
      outcome.kind === "succeeded" ? `Applied ${outcome.revision}.` : `${outcome.reason}: ${outcome.message}`,
    );
  }

  /**
   * The process stops mid-operation: a Kustomization this attempt resumed is suspended once,
   * recorded Unresolved with that token, and left for the next process, which ends it.
   */
  private async suspendOnStop(): Promise<void> {
    const phase = this.operation?.phase;
    if (phase !== "Running" && phase !== "Unresolved") return;
    try {
      const token = newToken(new Date());
      await this.flux!.suspend(await this.kustomization(), token);
      await this.record({
        ...this.operation!,
        phase: "Unresolved",
        suspendToken: token,
        message: "The operator stopped while this apply ran; the Kustomization was suspended as it stopped.",
      });
    } catch {
      // Best effort: the next process's claim finds the operation unfollowed and suspends it.
    }
  }

  /** Suspends the Kustomization again with a token, recorded as the operation's suspendToken. */
  protected async suspendAgain(phase: "Settling" | "Unresolved"): Promise<void> {
    const token = newToken(new Date());
    const k = await this.kustomization();
    await this.flux!.suspend(k, token);
    await this.record({ ...this.operation!, phase, suspendToken: token });
  }

  /**
   * Reads the Kustomization until `done` holds, or `deadline` passes (undefined then). Past the
   * budget (Unresolved) the reads slow down, doubling to a minute, and a claim being deleted
   * ends the follow Failed.
   */
  protected async waitFor(done: (k: KustomizationView) => boolean, deadline: number) {
    let interval = this.options.pollMs ?? 250;
    for (;;) {
      this.stopped();
      const k = await this.kustomization();
      if (done(k)) return k;
      if (Date.now() > deadline) return undefined;
      if (this.operation?.phase === "Unresolved") {
        interval = Math.min(interval * 2, 60_000);
        const claim = await this.options.claims.get(this.claim.metadata.namespace, this.claim.metadata.name!);
        if (!claim || claim.metadata.deletionTimestamp)
          throw new Ending("Failed", "The claim was deleted while its apply was followed.");
      }
      await sleep(interval, this.stop);
    }
  }

  protected stopped(): void {
    if (this.stop.aborted) throw new Ending("Failed", "The operator stopped while this apply ran.");
  }

  protected async kustomization(): Promise<KustomizationView> {
    const raw = await this.flux!.kustomization(claimedRef(this.claim));
    if (!raw) throw new Ending("Failed", `Kustomization ${keyOf(claimedRef(this.claim))} does not exist.`);
    return viewKustomization(raw, this.options.fieldManager);
  }

  protected async repository(k: KustomizationView): Promise<GitRepositoryView | undefined> {
    if (k.source.kind !== "GitRepository") return undefined;
    const raw = await this.flux!.repository(k.source);
    return raw && viewGitRepository(raw);
  }

  /**
   * A record that started nothing is withdrawn: the status holds again what it held before, so
   * the claim never shows an operation nothing could have applied; with nothing before, it ends
   * Failed saying why.
   */
  private async withdraw(message: string): Promise<void> {
    const before = this.previous;
    if (before) await this.record(before).catch(() => undefined);
    else await this.complete("Failed", `Withdrawn before the resume: ${message}`).catch(() => undefined);
  }

  protected async complete(phase: "Succeeded" | "Failed", message: string): Promise<void> {
    await this.record({
      ...this.operation!,
      phase,
      completedAt: new Date().toISOString(),
      message: message.slice(0, 4096),
    });
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
          { metadata: { namespace, name, resourceVersion }, status: { operation } } as FluxClaim,
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
      }
    }
  }
}

/** One attempt, step by step: it starts its operation with a resume. */
class Run extends Follow {
  constructor(
    options: FluxDispatcherOptions,
    claim: FluxClaim,
    attempt: Attempt,
    stop: AbortSignal,
    private readonly branch: { url: string; branch: string },
    private readonly current: () => boolean,
  ) {
    super(options, claim, attempt, stop);
  }

  protected async steps(): Promise<FluxOutcome> {
    await this.recheckTargets();
    if (!holdsApplier(this.claim)) {
      const inControl = this.claim.status?.conditions?.find((c) => c.type === "InControl");
      throw new Ending(
        "RequestFailed",
        `The claim does not hold its Kustomization (${inControl?.reason ?? "no InControl"}).`,
      );
    }
    if (this.claim.status?.operation && inFlight(this.claim.status.operation))
      throw new Ending("RequestFailed", "Another operation is in flight on the claim.");
    if (!this.flux) throw new Ending("RequestFailed", "The claim's KubeProvider is not connected.");
    await this.artifactHolds();
    const k = await this.recheckApplier();
    this.previous = this.claim.status?.operation;
    await this.record({
      phase: "Requested",
      requestToken: newToken(new Date()),
      ...(this.reason ? { reason: this.reason } : {}),
      commit: this.attempt.commit,
      requestedAt: new Date().toISOString(),
    });
    this.options.onRequested?.(this.claim, this.operation!);
    if (!this.current()) throw new Ending("Stale", "The tip moved while the operation was recorded.");
    const token = this.operation!.requestToken!;
    const mark = { readyTransition: k.ready?.lastTransitionTime, historyTop: k.historyTop };
    await this.resume(k, token);
    await this.record({ ...this.operation!, phase: "Running" });
    return this.followToEnd(token, k.requestedAt, mark);
  }

  /** Re-reads each target; with none still holding the attempt's reason, nothing is asked. */
  private async recheckTargets(): Promise<void> {
    const targets = await Promise.all(
      this.attempt.targets.map((t) => this.options.targets.get(t.ref.namespace, t.ref.name)),
    );
    const still = stillAsking(this.attempt, targets);
    if (still.length === 0) throw new Ending("Dropped", "No GitTarget still holds the request's reason.");
    this.reason = precedence.find((r) => still.some((t) => t.reason === r));
  }

  /** Makes the GitRepository's artifact hold the commit: stamped, and its token waited for. */
  private async artifactHolds(): Promise<void> {
    const k = await this.kustomization();
    const repository = await this.repository(k);
    const refused = rejection(k, repository, this.branch);
    if (refused) throw new Ending("Rejected", refused);
    if (revisionHolds(repository!.revision, this.attempt.commit)) return;
    const token = newToken(new Date());
    await this.flux!.stampRepository(repository!.ref, token);
    const deadline = Date.now() + (this.options.fetchTimeoutMs ?? 120_000);
    for (;;) {
      const now = await this.repository(k);
      if (now?.lastHandled === token || revisionHolds(now?.revision, this.attempt.commit)) {
        if (revisionHolds(now?.revision, this.attempt.commit)) return;
        throw this.current()
          ? new Ending(
              "RequestFailed",
              `GitRepository ${keyOf(k.source)} fetched ${now?.revision ?? "nothing"}, not ${this.attempt.commit}.`,
            )
          : new Ending("Stale", "The tip moved while the source fetched.");
      }
      if (Date.now() > deadline)
        throw new Ending(
          "RequestFailed",
          `GitRepository ${keyOf(k.source)} did not fetch within the deadline.`,
        );
      await sleep(this.options.pollMs ?? 250, this.stop);
      this.stopped();
    }
  }

  /** Just before the resume: the same Kustomization, still ours to resume, its artifact at the commit. */
  private async recheckApplier(): Promise<KustomizationView> {
    const k = await this.kustomization();
    const repository = await this.repository(k);
    const refused = rejection(k, repository, this.branch);
    if (refused) throw new Ending("Rejected", refused);
    if (!this.current()) throw new Ending("Stale", "The tip moved before the resume.");
    if (!revisionHolds(repository!.revision, this.attempt.commit))
      throw new Ending(
        "RequestFailed",
        `GitRepository ${keyOf(k.source)} no longer holds ${this.attempt.commit}.`,
      );
    return k;
  }

  /** spec.suspend: false with the token, onto the version read; a conflict reads again, up to five times. */
  private async resume(k: KustomizationView, token: string): Promise<void> {
    let view = k;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.flux!.resume(view, token);
        return;
      } catch (err) {
        if (statusCodeOf(err) !== 409 || attempt >= 5)
          throw new Ending("RequestFailed", `The resume failed: ${String(err)}`);
        view = await this.kustomization();
        if (view.uid !== k.uid) throw new Ending("RequestFailed", "The Kustomization was replaced.");
      }
    }
  }
}

/**
 * An operation a stopped process left in flight, followed to its end by its recorded tokens
 * and asking the applier for nothing (applier-claims.md, "Restart recovery"). Its request
 * token still on the Kustomization is followed as the attempt would have followed it; one
 * stamped over by a suspend the operation recorded is judged on whether a reconcile ran
 * since the request; one that is nowhere (the process stopped between the record and the
 * resume, or after a suspend it never recorded) is suspended and ends Failed.
 */
class Recovered extends Follow {
  constructor(
    options: FluxDispatcherOptions,
    claim: FluxClaim,
    attempt: Attempt,
    stop: AbortSignal,
    private readonly recorded: ApplyOperation,
  ) {
    super(options, claim, attempt, stop);
    this.operation = recorded;
    this.reason = recorded.reason;
    this.followed = recorded.requestToken;
    this.recordedAt = Date.parse(recorded.requestedAt ?? "") || Date.now();
  }

  protected async steps(): Promise<FluxOutcome> {
    if (!this.flux) throw new Ending("Failed", "The claim's KubeProvider is not connected.");
    const { requestToken, suspendToken, phase } = this.recorded;
    const mark = { requestedAt: new Date(this.recordedAt).toISOString() };
    const k = await this.kustomization();
    const on = (token: string | undefined) =>
      token !== undefined && (k.requestedAt === token || k.lastHandled === token);
    if (on(requestToken)) return this.followToEnd(requestToken!, undefined, mark);
    const suspendedByUs = on(suspendToken) && k.suspended;
    if (!suspendedByUs) await this.suspendAgain(phase === "Unresolved" ? "Unresolved" : "Settling");
    await this.settled();
    if (!on(suspendToken)) {
      const message =
        phase === "Requested"
          ? "The operator stopped between recording this apply and resuming the Kustomization: nothing was applied."
          : "The operator stopped after a suspend it never recorded, or the Kustomization was reconciled over this apply's token: whether it applied is unknown.";
      await this.complete("Failed", message);
      return { kind: "failed", reason: "NotFollowed", message };
    }
    const applied = await this.kustomization();
    const outcome = fluxOutcome(
      applied,
      mark,
      this.attempt.commit,
      (await this.repository(applied))?.revision,
    );
    await this.completeWith(outcome);
    return outcome;
  }
}
