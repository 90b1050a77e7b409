// The Flux dispatcher: one attempt of a branch worker, carried out against a held Kustomization
// (applier-claims.md, "One operation, every reason"), and never a retry of its own: the worker
// decides every retry, after a flush, at the tip as it is then. The attempt re-reads its
// targets, makes the GitRepository's artifact hold the commit, checks once more, records the
// operation on the claim before the write that starts it, resumes with a token, waits for
// that token handled and proof that a reconcile ran, reads the outcome table, suspends again
// and completes once that suspend is handled. Each phase is written to the claim's
// status.operation, so a person (and a later process) sees where it is.
import type { ApplyOperation, FluxClaim } from "../../../generated/v1alpha3/index.ts";
import { statusCodeOf } from "../../kube/resourceclient.ts";
import { sleep } from "../../timing/sleep.ts";
import { normalizeRepositoryUrl } from "../../types/repourl.ts";
import { keyOf } from "../../types/names.ts";
import {
  Dispatcher,
  Ending,
  Follow,
  type BranchAsked,
  type DispatcherOptions,
  type Proved,
} from "./dispatch.ts";
import { newToken, type Attempt } from "../decide/index.ts";
import { claimedRef, holdsApplier } from "../claim/index.ts";
import { FluxClient } from "../flux/client.ts";
import {
  fluxOutcome,
  revisionHolds,
  type FluxOutcome,
  type RecoveredMark,
  type ResumeMark,
} from "../flux/outcome.ts";
import {
  viewGitRepository,
  viewKustomization,
  type GitRepositoryView,
  type KustomizationView,
} from "../flux/view.ts";
import { errorText } from "../../telemetry/errortext.ts";

export interface FluxDispatcherOptions extends DispatcherOptions<FluxClaim> {
  /** How long the source may take to fetch the commit: 2 minutes. */
  fetchTimeoutMs?: number;
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

export class FluxDispatcher extends Dispatcher<FluxClaim> {
  readonly name = "flux-dispatcher";
  protected readonly kind = "FluxClaim";

  constructor(protected override readonly options: FluxDispatcherOptions) {
    super(options);
  }

  protected attempted(claim: FluxClaim, attempt: Attempt, branch: BranchAsked): Follow<FluxClaim> {
    return new Run(this.options, claim, attempt, this.stopping.signal, branch);
  }

  protected recovered(claim: FluxClaim, attempt: Attempt, operation: ApplyOperation): Follow<FluxClaim> {
    return new Recovered(this.options, claim, attempt, this.stopping.signal, operation);
  }
}

/**
 * What following one Flux operation takes, to the suspend that ends it: the reads of Flux's
 * objects and the suspends. An attempt (Run) starts its operation; a recovery (Recovered)
 * follows one a stopped process started.
 */
abstract class FluxFollow extends Follow<FluxClaim> {
  protected readonly flux: FluxClient | undefined;

  constructor(
    protected override readonly options: FluxDispatcherOptions,
    claim: FluxClaim,
    attempt: Attempt,
    stop: AbortSignal,
    recovered?: ApplyOperation,
  ) {
    super(options, claim, attempt, stop, recovered);
    const kubeConfig = options.clusterOf(claim);
    this.flux = kubeConfig && new FluxClient(kubeConfig, options.fieldManager);
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
  ): Promise<Proved> {
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
    return this.completeWith(proved(outcome, this.attempt.commit));
  }

  /** Waits until the operation's suspend is handled: the Kustomization suspended, every reconcile before it ended. */
  protected async settled(): Promise<void> {
    const suspendToken = this.operation!.suspendToken!;
    await this.waitFor((v) => v.suspended && handled(v, suspendToken, undefined), Infinity);
  }

  /**
   * The process stops mid-operation: a Kustomization this attempt resumed is suspended once,
   * recorded Unresolved with that token, and left for the next process, which ends it.
   */
  protected override async onStop(): Promise<void> {
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
        await this.claimStillThere();
      }
      await sleep(interval, this.stop);
    }
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
}

/** One attempt, step by step: it starts its operation with a resume. */
class Run extends FluxFollow {
  constructor(
    options: FluxDispatcherOptions,
    claim: FluxClaim,
    attempt: Attempt,
    stop: AbortSignal,
    private readonly branch: BranchAsked,
  ) {
    super(options, claim, attempt, stop);
  }

  protected async steps(): Promise<Proved> {
    await this.recheckTargets();
    this.checkClaim(holdsApplier, "Kustomization");
    if (!this.flux) throw new Ending("RequestFailed", "The claim's KubeProvider is not connected.");
    await this.artifactHolds();
    const k = await this.recheckApplier();
    const token = await this.recordRequested();
    if (!this.branch.current()) throw new Ending("Stale", "The tip moved while the operation was recorded.");
    const mark = { readyTransition: k.ready?.lastTransitionTime, historyTop: k.historyTop };
    const lost = await this.resume(k, token);
    await this.record({ ...this.operation!, phase: "Running", ...(lost ? { message: lost } : {}) });
    return this.followToEnd(token, k.requestedAt, mark);
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
        throw this.branch.current()
          ? new Ending(
              "RequestFailed",
              `GitRepository ${keyOf(k.source)} fetched ${now?.revision ?? "nothing"}, not ${this.attempt.commit}.`,
              now?.revision !== undefined,
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
    if (!this.branch.current()) throw new Ending("Stale", "The tip moved before the resume.");
    if (!revisionHolds(repository!.revision, this.attempt.commit))
      throw new Ending(
        "RequestFailed",
        `GitRepository ${keyOf(k.source)} no longer holds ${this.attempt.commit}.`,
      );
    return k;
  }

  /**
   * spec.suspend: false with the token, onto the version read; a conflict reads again, up to five
   * times. A resume whose answer is lost (a timeout, a dropped connection, a server error) may
   * have landed: it is followed, and suspended again, as if it had (applier-claims.md, "Resume
   * with a token"), and what is returned says so on the operation. If it did not land, nothing
   * handles its token, and the budget ends it.
   */
  private async resume(k: KustomizationView, token: string): Promise<string | undefined> {
    let view = k;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.flux!.resume(view, token);
        return undefined;
      } catch (err) {
        if (answerLost(err))
          return `The resume's answer was lost (${errorText(err)}): followed as if it landed.`;
        if (statusCodeOf(err) !== 409 || attempt >= 5)
          throw new Ending("RequestFailed", `The resume failed: ${errorText(err)}`);
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
class Recovered extends FluxFollow {
  constructor(
    options: FluxDispatcherOptions,
    claim: FluxClaim,
    attempt: Attempt,
    stop: AbortSignal,
    private readonly recorded: ApplyOperation,
  ) {
    super(options, claim, attempt, stop, recorded);
  }

  protected async steps(): Promise<Proved> {
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
      return this.completeWith({ kind: "failed", message });
    }
    const applied = await this.kustomization();
    const revision = (await this.repository(applied))?.revision;
    return this.completeWith(
      proved(fluxOutcome(applied, mark, this.attempt.commit, revision), this.attempt.commit),
    );
  }
}

/**
 * Whether a write's answer says nothing of whether it landed: no HTTP status (a timeout, a reset
 * connection) or a server error. A 4xx is the API server's refusal, made before anything landed.
 */
export function answerLost(err: unknown): boolean {
  const code = statusCodeOf(err);
  return code === undefined || code >= 500;
}

/** The outcome table's answer, as the operation's end says it. */
function proved(outcome: FluxOutcome, commit: string): Proved {
  return outcome.kind === "succeeded"
    ? {
        kind: "succeeded",
        message: `Applied ${outcome.revision}${outcome.mismatch ? ` (asked for ${commit}: the source moved on)` : ""}.`,
        mismatch: outcome.mismatch,
      }
    : { kind: "failed", message: `${outcome.reason}: ${outcome.message}` };
}
