// GitBranch: may this GitBranch write its repository branch? The controller checks that its
// GitProvider exists and admits this namespace and branch, proves the provider's credential
// opens a receive-pack session (at most once per steady interval while that succeeds), and
// takes part in the branch claim, which gives a repository branch to the oldest GitBranch that
// proved one. It publishes the normalized repository and how many GitTargets write through it.
// The claim lives in memory: deleting a GitBranch releases it behind a finalizer, so a younger
// candidate takes the branch over at once, and then stops its worker, which publishes what it
// holds (or the finalizer reports what it could not) before the finalizer goes. The controller
// alone runs the GitBranch's branch worker: while the GitBranch holds its branch on this replica
// and its provider's credential and signing key can be used, it makes the worker (once a served
// GitTarget asks for it) and replaces it when they change; otherwise it holds a running worker,
// which goes on publishing what it decided but takes no target. The GitTargets on the branch
// attach to it. While the worker's publications fail, Ready says so, as every GitTarget on the
// branch does.
import { hostname } from "node:os";
import { CoreV1Api, type KubernetesObject } from "@kubernetes/client-node";
import {
  gitBranches,
  resourceTypes,
  type GitBranch,
  type GitProvider,
  type GitTarget,
} from "../generated/v1alpha3/index.ts";
import type { BranchClaims, BranchKey, Candidate } from "../internal/gitbranch/branchclaim.ts";
import type { WorkerManager } from "../internal/git/index.ts";
import { workerSpec, type WorkerSpecOutcome } from "../internal/gitbranch/workerspec.ts";
import { normalizeRepositoryUrl } from "../internal/types/repourl.ts";
import { admitBranch, providerRefOf } from "../internal/gitbranch/admission.ts";
import {
  decideBranch,
  proofIsFresh,
  workerReadyKey,
  type BranchFacts,
  type Proof,
} from "../internal/gitbranch/decide.ts";
import {
  gitBranchRecheckIntervals,
  nextPass,
  recheckRateLimiter,
  type RecheckIntervals,
} from "../internal/gitprovider/recheck.ts";
import { probeWith, type RemoteCheck } from "../internal/gitprovider/remotecheck.ts";
import {
  loadProviderSecrets,
  secretOf,
  type CredentialProblem,
  type LoadedCredential,
  type ProviderSecrets,
} from "../internal/gitprovider/secrets.ts";
import { informerSource, namespaceType } from "../internal/kube/sources.ts";
import {
  Controller,
  type ReconcileContext,
  type Reconciler,
  type Request,
  type Result,
} from "../internal/operator/controller.ts";
import type { Logger } from "../internal/telemetry/logger.ts";
import { storeKey, keyOf } from "../internal/types/names.ts";
import { EventRecorder } from "../internal/operator/events.ts";
import { ConditionEvents } from "../internal/operator/conditionevents.ts";
import { gitBranchEventRules } from "../internal/gitbranch/events.ts";
import { ensureFinalizer, hasFinalizer, removeFinalizer } from "../internal/operator/finalizers.ts";
import type { SharedInformer } from "../internal/operator/informer.ts";
import type { Manager } from "../internal/operator/manager.ts";
import {
  anyOf,
  generationChanged,
  labelsChanged,
  readyTransition,
  reconcileRequested,
  requestedAtAnnotation,
  type UpdatePredicate,
} from "../internal/operator/predicates.ts";
import { StatusWriter } from "../internal/operator/status.ts";
import { fieldManager } from "../internal/operator/fieldmanager.ts";

export const gitBranchFinalizer = "configbutler.ai/gitbranch";

export interface GitBranchDeps {
  /** The claims the GitTarget reconciler and the branch workers read; one per process. */
  claims: BranchClaims;
  intervals?: Partial<RecheckIntervals>;
  /** How long one receive-pack advertisement may take. */
  probeTimeoutMs?: number;
  now?: () => Date;
  /** Has the branch's worker prove where the branch is now: reconcile.configbutler.ai/requestedAt. */
  onReconcileRequested?: (branchKey: string) => void;
  /**
   * The branch workers: the GitBranch's worker made, replaced and released here, and what each
   * reports, for Ready. None: no worker runs (the claim and the push session are still proved).
   */
  workers?: Pick<
    WorkerManager,
    | "branchState"
    | "onBranchChanged"
    | "release"
    | "ensure"
    | "hold"
    | "mayRun"
    | "has"
    | "wanted"
    | "onWorkerWanted"
  >;
  /** Called once a GitBranch's worker is retired, to forget what was published for it. */
  onReleased?: (branchKey: string) => void;
  /** This process's leader Lease identity: status.heldBy of the branches it holds. */
  identity?: string;
  /** With more than one replica: a GitBranch's repository branch, its shard. */
  shardOf?: (request: Request) => string | undefined;
}

export interface GitBranchInformers {
  branches: SharedInformer<GitBranch>;
  providers: SharedInformer<GitProvider>;
  targets: SharedInformer<GitTarget>;
  namespaces: SharedInformer<KubernetesObject>;
}

export class GitBranchReconciler implements Reconciler {
  private readonly status: StatusWriter;
  private readonly intervals: RecheckIntervals;
  private readonly now: () => Date;
  /** The last push session each GitBranch proved, by namespace/name. */
  private readonly proofs = new Map<string, Proof>();
  /** The requestedAt each GitBranch last had handled. */
  private readonly handledRequests = new Map<string, string>();
  /** The branch claimed or lost, its publications failing or landing again: as Events. */
  private readonly transitions: ConditionEvents;
  /** Why each GitBranch runs no worker, as last logged. */
  private readonly noWorker = new Map<string, string>();

  constructor(
    private readonly core: CoreV1Api,
    private readonly client: ReturnType<typeof gitBranches>,
    private readonly informers: GitBranchInformers,
    private readonly deps: GitBranchDeps,
    /** Where the finalizer reports writes it could not publish, and the conditions' transitions. */
    private readonly events: EventRecorder,
  ) {
    this.transitions = new ConditionEvents(events, gitBranchEventRules);
    this.intervals = { ...gitBranchRecheckIntervals, ...deps.intervals };
    this.now = deps.now ?? (() => new Date());
    this.status = new StatusWriter(fieldManager, this.now);
  }

  async reconcile(request: Request, context?: ReconcileContext): Promise<Result> {
    const key = storeKey(request);
    const found = this.informers.branches.get(request.name, request.namespace);
    if (!found) {
      // Gone without our finalizer running (removed by hand): it claims nothing any more.
      await this.disown(request);
      return {};
    }
    if (found.metadata.deletionTimestamp) return this.finalize(found, key);
    const requestedAt = found.metadata.annotations?.[requestedAtAnnotation];
    if (requestedAt !== undefined && this.handledRequests.get(key) !== requestedAt) {
      this.handledRequests.set(key, requestedAt);
      this.deps.onReconcileRequested?.(key);
    }
    const branch = await ensureFinalizer(this.client, found, gitBranchFinalizer);

    const ref = providerRefOf(branch);
    const provider = this.informers.providers.get(ref.name, ref.namespace);
    const labels = this.informers.namespaces.get(branch.metadata.namespace!)?.metadata?.labels ?? {};
    const admission = admitBranch(branch, provider, labels);

    let facts: BranchFacts;
    let secrets: ProviderSecrets | undefined;
    if (admission.admitted) {
      // Read once for the pass: the push session's proof and the worker both use them.
      secrets = await loadProviderSecrets(this.core, admission.provider);
      facts = { ...(await this.claim(key, branch, admission.provider, secrets.credential)), admission };
    } else {
      // Not admitted (any more): it gives its branch up.
      this.deps.claims.withdraw(branch.metadata.uid!);
      this.proofs.delete(key);
      facts = { stage: "rejected", admission };
    }

    const decision = decideBranch(facts, branch.metadata.generation);
    const repository = provider ? normalizeRepositoryUrl(provider.spec.url) : undefined;
    const heldBy =
      facts.stage === "checked" && facts.holder?.uid === facts.self.uid ? this.deps.identity : undefined;
    await this.status.write(this.client, branch, {
      conditions: decision.conditions,
      fields: {
        gitTargetCount: this.targetCount(branch),
        ...(repository ? { repository } : {}),
        ...(heldBy ? { heldBy } : {}),
      },
    });
    await this.transitions.observe(key, branch, decision.conditions);
    await this.runWorker(key, branch, facts, secrets, context?.logger);
    const ready = decision.conditions.find((c) => c.type === "Ready")!;
    // A steady pass comes back when the proof goes stale, so it is re-proved once per interval.
    const intervals = { ...this.intervals, steadyMs: this.proofExpiresInMs(key) };
    return nextPass(decision.recheck, intervals, `${key}: ${ready.message}`);
  }

  /**
   * Lets go of a GitBranch this process no longer handles (gone, or its repository branch held
   * by another replica): it claims nothing here, and its worker stops, publishing what it holds.
   */
  async disown(request: Request): Promise<void> {
    const key = storeKey(request);
    this.deps.claims.withdrawByName(request.namespace ?? "", request.name);
    this.proofs.delete(key);
    this.transitions.forget(key);
    this.noWorker.delete(key);
    await this.retireWorker(key);
  }

  /**
   * Runs the GitBranch's worker while it holds its branch here and its provider's credential and
   * signing key can be used: made once a served GitTarget asks for it (onWorkerWanted), or
   * replaced when its spec changed (a rotated credential or key, a recreated GitProvider).
   * Otherwise a running worker is held: it goes on publishing what it decided and takes no
   * target, so no write it accepted is dropped; the log says why once per reason. Its GitTargets
   * hear of either (onWorkerChanged). Deletion, disowning and a shard lost release it.
   */
  private async runWorker(
    key: string,
    branch: GitBranch,
    facts: BranchFacts,
    secrets: ProviderSecrets | undefined,
    logger: Logger | undefined,
  ): Promise<void> {
    const workers = this.deps.workers;
    if (!workers) return;
    const outcome = this.workerFor(key, branch, facts, secrets);
    if (outcome.kind === "spec") {
      this.noWorker.delete(key);
      await workers.ensure(outcome.spec);
      return;
    }
    if (this.noWorker.get(key) !== outcome.reason) {
      this.noWorker.set(key, outcome.reason);
      logger?.info("GitBranch runs no branch worker", { reason: outcome.reason });
    }
    await workers.hold(key, outcome.reason);
  }

  /** The GitBranch's worker spec, or why it runs none. */
  private workerFor(
    key: string,
    branch: GitBranch,
    facts: BranchFacts,
    secrets: ProviderSecrets | undefined,
  ): WorkerSpecOutcome {
    const workers = this.deps.workers!;
    if (facts.stage !== "checked" || !secrets)
      return { kind: "none", reason: `it is not admitted: ${facts.admission.message}` };
    if (facts.holder?.uid !== facts.self.uid)
      return { kind: "none", reason: `it does not hold its branch ${facts.branch} of ${facts.repository}` };
    // A reconcile that raced a handover: the branch is another replica's now.
    if (!workers.mayRun(key)) return { kind: "none", reason: "another replica holds its branch" };
    const outcome = workerSpec(branch, facts.admission.provider, secrets.credential, secrets.signing);
    // A worker is made once a served GitTarget asks for one; one running stays.
    if (outcome.kind === "spec" && !workers.has(key) && !workers.wanted(key))
      return { kind: "none", reason: "no served GitTarget writes through it yet" };
    return outcome;
  }

  /** Proves the push session and takes part in the branch claim with the outcome. */
  private async claim(
    key: string,
    branch: GitBranch,
    provider: GitProvider,
    loaded: LoadedCredential | CredentialProblem,
  ): Promise<Omit<Extract<BranchFacts, { stage: "checked" }>, "admission">> {
    const claimKey: BranchKey = {
      repository: normalizeRepositoryUrl(provider.spec.url),
      branch: branch.spec.branch,
    };
    const check = await this.provePushSession(key, branch, provider, loaded);
    if (check.kind === "answered") this.deps.claims.proved(claimKey, candidateOf(branch));
    else this.deps.claims.failed(claimKey, branch.metadata.uid!);
    const { namespace, name } = provider.metadata;
    return {
      stage: "checked",
      check,
      context: { url: provider.spec.url, provider: keyOf({ namespace, name }), secret: secretOf(provider) },
      ...claimKey,
      ...(branch.spec.parentBranch ? { parentBranch: branch.spec.parentBranch } : {}),
      self: { uid: branch.metadata.uid!, namespace: branch.metadata.namespace! },
      holder: this.deps.claims.holder(claimKey),
      worker: this.deps.workers?.branchState(key),
    };
  }

  /**
   * The finalizer's work: release the claim, so the next candidate takes the branch; stop the
   * worker, whose one publication is bounded (20 s), and report what it could not publish; then
   * let go. Nothing deletes the branch on the remote.
   */
  private async finalize(branch: GitBranch, key: string): Promise<Result> {
    this.deps.claims.withdraw(branch.metadata.uid!);
    this.proofs.delete(key);
    this.noWorker.delete(key);
    const unpublished = await this.retireWorker(key);
    if (unpublished) {
      await this.events.record(
        branch,
        "Warning",
        "WritesNotPublished",
        "Finalize",
        `Deleted with ${unpublished.writes.length} decided write(s) its branch worker could not publish (${unpublished.error}): ${unpublished.writes.join("; ")}. The live objects are unchanged: a GitTarget that writes the folder again starts from a snapshot of them.`,
      );
    }
    if (hasFinalizer(branch, gitBranchFinalizer))
      await removeFinalizer(this.client, branch, gitBranchFinalizer);
    return {};
  }

  /** Stops the GitBranch's worker, if one runs: what it could not publish. */
  private async retireWorker(key: string) {
    const unpublished = await this.deps.workers?.release(key);
    this.deps.onReleased?.(key);
    return unpublished;
  }

  /** With the credential read this pass, opens a push session only when the last proof is stale. */
  private async provePushSession(
    key: string,
    branch: GitBranch,
    provider: GitProvider,
    loaded: LoadedCredential | CredentialProblem,
  ): Promise<RemoteCheck> {
    if (loaded.kind !== "loaded") {
      this.proofs.delete(key);
      return loaded;
    }
    const fingerprint = `${branch.metadata.uid}/${loaded.fingerprint}`;
    const nowMs = this.now().getTime();
    if (proofIsFresh(this.proofs.get(key), fingerprint, nowMs, this.intervals.steadyMs)) {
      return { kind: "answered" };
    }
    const outcome = await probeWith(provider, loaded.credential, {
      forPush: true,
      timeoutMs: this.deps.probeTimeoutMs,
    });
    if (outcome.kind === "answered") this.proofs.set(key, { fingerprint, atMs: nowMs });
    else this.proofs.delete(key);
    return outcome;
  }

  /** How long the last proof stays fresh. */
  private proofExpiresInMs(key: string): number {
    const proof = this.proofs.get(key);
    const age = proof ? this.now().getTime() - proof.atMs : 0;
    return Math.max(this.intervals.steadyMs - age, 0);
  }

  private targetCount(branch: GitBranch): number {
    const { namespace, name } = branch.metadata;
    return this.informers.targets.list().filter((t) => {
      const ref = branchRefOf(t);
      return ref.namespace === namespace && ref.name === name;
    }).length;
  }
}

function branchRefOf(target: GitTarget): Request & { namespace: string } {
  const ref = target.spec.gitBranchRef;
  return { namespace: ref.namespace ?? target.metadata.namespace!, name: ref.name };
}

function candidateOf(branch: GitBranch): Candidate {
  const created = branch.metadata.creationTimestamp as unknown;
  return {
    uid: branch.metadata.uid!,
    namespace: branch.metadata.namespace!,
    name: branch.metadata.name!,
    // Raw JSON carries a string; client-node's models a Date.
    createdAt: typeof created === "string" ? created : created instanceof Date ? created.toISOString() : "",
  };
}

/** gitBranchRef is immutable, so only a GitTarget's arrival or removal changes a count. */
const never: UpdatePredicate = () => false;

/** Builds the GitBranch controller, with its watches, and adds it to the manager. */
export function setupGitBranchController(manager: Manager, deps: GitBranchDeps): Controller {
  const kc = manager.kubeConfig;
  const informers: GitBranchInformers = {
    branches: manager.informer<GitBranch>(informerSource(kc, resourceTypes.GitBranch)),
    providers: manager.informer<GitProvider>(informerSource(kc, resourceTypes.GitProvider)),
    targets: manager.informer<GitTarget>(informerSource(kc, resourceTypes.GitTarget)),
    namespaces: manager.informer<KubernetesObject>(informerSource(kc, namespaceType)),
  };
  const { branches } = informers;
  const naming = (provider: GitProvider): Request[] =>
    branches
      .list()
      .filter((b) => {
        const ref = providerRefOf(b);
        return ref.namespace === provider.metadata.namespace && ref.name === provider.metadata.name;
      })
      .map((b) => ({ namespace: b.metadata.namespace, name: b.metadata.name! }));
  const events = new EventRecorder(kc, hostname(), manager.logger);
  const reconciler = new GitBranchReconciler(
    kc.makeApiClient(CoreV1Api),
    gitBranches(kc),
    informers,
    deps,
    events,
  );
  const controller = new Controller("gitbranch", reconciler, manager.logger, {
    rateLimiter: recheckRateLimiter({ ...gitBranchRecheckIntervals, ...deps.intervals }),
    ...(deps.shardOf ? { shardOf: deps.shardOf } : {}),
  })
    .for(branches, anyOf(generationChanged, reconcileRequested))
    // A provider's spec (its grants) or its readiness (a fixed credential) re-runs the check.
    .watches(informers.providers, naming, anyOf(generationChanged, readyTransition))
    .watches(informers.targets, (target) => [branchRefOf(target)], never)
    // Selector grants read the GitBranch namespace's labels.
    .watches(
      informers.namespaces,
      (ns) =>
        branches
          .list(ns.metadata?.name)
          .map((b) => ({ namespace: b.metadata.namespace, name: b.metadata.name! })),
      labelsChanged,
    );
  // A worker's outage starting, changing or ending changes Ready at once, as it does every
  // GitTarget's; what Ready does not read wakes nothing.
  const shown = new Map<string, string>();
  const { workers } = deps;
  workers?.onBranchChanged((key) => {
    const ready = workerReadyKey(workers.branchState(key));
    if ((shown.get(key) ?? "") === ready) return;
    if (ready) shown.set(key, ready);
    else shown.delete(key);
    controller.queue.add(key);
  });
  // A served GitTarget that found no worker for its GitBranch: the GitBranch makes one now.
  workers?.onWorkerWanted((key) => controller.queue.add(key));
  // A released or taken-over branch wakes its other candidates, so the conflict clears at once.
  deps.claims.onHolderChanged((_key, candidates) => {
    for (const c of candidates) controller.queue.add(storeKey({ namespace: c.namespace, name: c.name }));
  });
  manager.addController(controller);
  return controller;
}
