// GitTarget: checks its references in status, and has its KubeProvider's source context serve
// it, which opens one watch per planned collection and streams the target's items. Its stream
// feeds its GitBranch's branch worker while one runs; the GitBranch reconciler runs it.
import { hostname } from "node:os";
import type { KubernetesObject, V1Namespace } from "@kubernetes/client-node";
import {
  gitTargets,
  resourceTypes,
  type GitBranch,
  type GitProvider,
  type ArgoCDClaim,
  type WebhookClaim,
  type FluxClaim,
  type GitTarget,
  type KubeProvider,
} from "../generated/v1alpha3/index.ts";
import { claimedApplier, targetWrites, type ClaimFacts } from "../internal/gittarget/claim.ts";
import type { BranchClaims } from "../internal/gitbranch/branchclaim.ts";
import {
  contentionFacts,
  outageFacts,
  type AttachOutcome,
  type FolderReport,
  type TargetWriteState,
  type WorkerManager,
} from "../internal/git/index.ts";
import { targetSettings } from "../internal/gittarget/worker.ts";
import {
  reconcileRequest,
  targetConditions,
  validate,
  type TargetWorld,
} from "../internal/gittarget/decide.ts";
import { refOf, keyOf, parseKey, type NamespacedName } from "../internal/types/names.ts";
import { informerSource, namespaceType } from "../internal/kube/sources.ts";
import {
  Controller,
  type ReconcileContext,
  type Reconciler,
  type Request,
  type Result,
} from "../internal/operator/controller.ts";
import type { SharedInformer } from "../internal/operator/informer.ts";
import { ConditionEvents } from "../internal/operator/conditionevents.ts";
import { EventRecorder } from "../internal/operator/events.ts";
import { gitTargetEventRules } from "../internal/gittarget/events.ts";
import type { Manager } from "../internal/operator/manager.ts";
import {
  anyOf,
  generationChanged,
  labelsChanged,
  readyTransition,
  reconcileRequested,
  requestedAtAnnotation,
} from "../internal/operator/predicates.ts";
import { StatusWriter } from "../internal/operator/status.ts";
import type { SourceContexts } from "../internal/watch/sourcecontexts.ts";
import type { GitTargetEventStream } from "../internal/stream/stream.ts";
import type { Logger } from "../internal/telemetry/logger.ts";
import { fieldManager } from "../internal/operator/fieldmanager.ts";

const steadyRecheckMs = 5 * 60_000;
const progressRecheckMs = 10_000;

interface Informers {
  targets: SharedInformer<GitTarget>;
  providers: SharedInformer<KubeProvider>;
  branches: SharedInformer<GitBranch>;
  gitProviders: SharedInformer<GitProvider>;
  namespaces: SharedInformer<V1Namespace>;
  fluxClaims: SharedInformer<FluxClaim>;
  argoClaims: SharedInformer<ArgoCDClaim>;
  webhookClaims: SharedInformer<WebhookClaim>;
}

/** The write side a target feeds while its GitBranch's worker runs. */
export interface WriteSide {
  claims: BranchClaims;
  workers: WorkerManager;
  /** With more than one replica: a GitTarget's repository branch, its shard. */
  shardOf?: (request: Request) => string | undefined;
}

const sameRef = (a: { namespace: string; name: string }, b: { namespace: string; name: string }) =>
  a.namespace === b.namespace && a.name === b.name;

export class GitTargetReconciler implements Reconciler {
  private readonly status = new StatusWriter(fieldManager);
  /** Which provider's context serves each target, so a move or a refusal releases the old one. */
  private readonly servedBy = new Map<string, string>();
  /** The requestedAt each target last asked its branch worker to read the folder again for. */
  private readonly askedRequests = new Map<string, string>();
  /** Why each target feeds no worker, as last logged. */
  private readonly detachedFor = new Map<string, string>();
  /** The targets being let go of now: their streams are read out before the worker goes. */
  private readonly lettingGo = new Map<string, Promise<void>>();
  /** Its folder refused or accepted again, encryption refused, its pushes failing or landing: as Events. */
  private readonly transitions: ConditionEvents;

  constructor(
    private readonly manager: Manager,
    private readonly informers: Informers,
    private readonly sourceContexts: SourceContexts,
    private readonly writeSide: WriteSide,
    events: EventRecorder,
  ) {
    this.transitions = new ConditionEvents(events, gitTargetEventRules);
  }

  async reconcile(request: Request, { logger }: ReconcileContext): Promise<Result> {
    const key = keyOf(request);
    const target = this.informers.targets.get(request.name, request.namespace);
    if (!target) {
      await this.disown(request);
      return {};
    }

    const world = this.load(target);
    const refusal = validate(world);
    const providerKey = keyOf(refOf(target.spec.kubeProviderRef, target.metadata.namespace!));
    const context = refusal ? undefined : this.sourceContexts.get(providerKey);
    const ref = { namespace: target.metadata.namespace!, name: target.metadata.name! };
    if (context) {
      if (this.servedBy.get(key) !== providerKey) await this.release(key);
      context.watchManager.serve(ref, target.metadata.uid);
      this.servedBy.set(key, providerKey);
    } else {
      await this.release(key);
    }

    await this.connectWorker(target, world.branch, context?.watchManager.streamFor(ref), logger);

    const streams = context?.watchManager.summary(ref);
    const writeState = this.writeSide.workers.targetState(key);
    const folder = writeState?.folder;
    const attached = this.writeSide.workers.isAttached(ref);
    const lastHandledReconcileAt = this.recheckFolder(target, attached, writeState);
    const unproven = context?.watchManager.unprovenKinds(ref) ?? [];
    const conditions = targetConditions(world, refusal, streams && { ...streams, unproven }, {
      attached,
      refused: [...(writeState?.refused ?? [])].sort(),
      encryptedDocuments: folder?.encryptedDocuments,
      folderRefusal: folder?.refusal?.message,
      refusedWrites: folder?.refusedWrites,
      renderGate: folder?.renderGate,
      outage: outageFacts(writeState?.branch),
      contention: contentionFacts(writeState?.branch),
    });
    await this.status.write(gitTargets(this.manager.kubeConfig), target, {
      conditions,
      fields: {
        ...(streams ? { streams } : {}),
        ...(folder?.placement ? { placement: placementStatus(folder.placement) } : {}),
        ...(lastHandledReconcileAt ? { lastHandledReconcileAt } : {}),
      },
    });
    await this.transitions.observe(key, target, conditions);
    // A suspended target waits for a person, not for a dependency: no quick re-check.
    const settled = target.spec.suspend || conditions.find((c) => c.type === "Ready")?.status === "True";
    return { requeueAfterMs: settled ? steadyRecheckMs : progressRecheckMs };
  }

  /**
   * Lets go of a GitTarget this process no longer handles (gone, or its branch held by another
   * replica): its watches stop and it feeds no worker here.
   */
  disown(request: Request): Promise<void> {
    const key = keyOf(request);
    // A handover and the reconcile its move queued may both ask: the second waits for the first.
    let letting = this.lettingGo.get(key);
    if (!letting) {
      letting = this.letGo(request).finally(() => this.lettingGo.delete(key));
      this.lettingGo.set(key, letting);
    }
    return letting;
  }

  private async letGo(request: Request): Promise<void> {
    const key = keyOf(request);
    // Still there, its work moves to another replica: its stream is read out into the worker (if
    // one reads it), and its watches' cursors are left where the worker stopped taking.
    const moving = this.informers.targets.get(request.name, request.namespace) !== undefined;
    const attached = this.writeSide.workers.isAttached({
      namespace: request.namespace ?? "",
      name: request.name,
    });
    await this.release(key, moving ? (attached ? "readOut" : "leave") : "forget");
    this.askedRequests.delete(key);
    this.detachedFor.delete(key);
    this.transitions.forget(key);
    this.writeSide.workers.detach({ namespace: request.namespace ?? "", name: request.name });
  }

  /**
   * Has the branch worker read the folder again where that is due: a refused folder on every
   * tick, so a fix pushed to Git clears it, and any folder for a new requestedAt. Returns the
   * requestedAt handled so far, for status.lastHandledReconcileAt.
   */
  private recheckFolder(
    target: GitTarget,
    attached: boolean,
    writeState: TargetWriteState | undefined,
  ): string | undefined {
    const ref = { namespace: target.metadata.namespace!, name: target.metadata.name! };
    const key = keyOf(ref);
    const { ask, handled } = reconcileRequest({
      requested: target.metadata.annotations?.[requestedAtAnnotation],
      lastHandled: target.status?.lastHandledReconcileAt,
      asked: this.askedRequests.get(key),
      attached,
      folderRead: writeState?.handledRequest,
    });
    if (ask !== undefined) {
      this.askedRequests.set(key, ask);
      this.writeSide.workers.recheck(ref, this.settingsOf(target), ask);
    } else if (writeState?.folder?.refusal) {
      this.writeSide.workers.recheck(ref, this.settingsOf(target));
    }
    return handled;
  }

  /**
   * Feeds the target's stream to its GitBranch's worker while one runs: the GitBranch reconciler
   * runs it once the GitBranch holds its branch here and its provider's credential and signing
   * key can be used. Otherwise the target feeds nothing, and the log says why once per reason.
   */
  private async connectWorker(
    target: GitTarget,
    branch: GitBranch | undefined,
    stream: GitTargetEventStream | undefined,
    logger: Logger,
  ): Promise<void> {
    const ref = { namespace: target.metadata.namespace!, name: target.metadata.name! };
    const key = keyOf(ref);
    const outcome = await this.attach(ref, target, branch, stream);
    const reason = outcome.attached ? undefined : outcome.reason;
    if (reason === undefined) {
      this.detachedFor.delete(key);
      return;
    }
    this.writeSide.workers.detach(ref);
    if (this.detachedFor.get(key) !== reason) {
      this.detachedFor.set(key, reason);
      logger.info("GitTarget feeds no branch worker", { reason });
    }
  }

  /** Feeds the stream to the worker its GitBranch runs, or why it cannot. */
  private async attach(
    ref: NamespacedName,
    target: GitTarget,
    branch: GitBranch | undefined,
    stream: GitTargetEventStream | undefined,
  ): Promise<AttachOutcome> {
    if (!stream) return { attached: false, reason: "no stream: the target is not served" };
    if (!branch) return { attached: false, reason: "its GitBranch does not exist" };
    const running = { key: keyOf(branch.metadata), uid: branch.metadata.uid! };
    return this.writeSide.workers.attachRunning(ref, running, this.settingsOf(target), stream);
  }

  private load(target: GitTarget): TargetWorld {
    const namespace = target.metadata.namespace!;
    const p = refOf(target.spec.kubeProviderRef, namespace);
    const b = refOf(target.spec.gitBranchRef, namespace);
    return {
      target,
      provider: this.informers.providers.get(p.name, p.namespace),
      branch: this.informers.branches.get(b.name, b.namespace),
      namespaceLabels: this.informers.namespaces.get(namespace)?.metadata?.labels ?? {},
      sameBranch: this.informers.targets
        .list()
        .filter((t) => sameRef(refOf(t.spec.gitBranchRef, t.metadata.namespace!), b)),
      ...(target.spec.applierClaimRef ? { claim: this.claimFacts(target, target.spec.applierClaimRef) } : {}),
    };
  }

  /** The target's settings, with the applier its claim holds: a coordinated folder's owner. */
  private settingsOf(target: GitTarget) {
    const claim = this.claimOf(target);
    return targetSettings(target, claim && { applier: claimedApplier(target, claim) });
  }

  private claimOf(target: GitTarget): FluxClaim | ArgoCDClaim | WebhookClaim | undefined {
    const ref = target.spec.applierClaimRef;
    if (!ref) return undefined;
    const claims = {
      FluxClaim: this.informers.fluxClaims,
      ArgoCDClaim: this.informers.argoClaims,
      WebhookClaim: this.informers.webhookClaims,
    }[ref.kind] as SharedInformer<FluxClaim | ArgoCDClaim | WebhookClaim>;
    return claims.get(ref.name, target.metadata.namespace);
  }

  private claimFacts(target: GitTarget, ref: { kind: string; name: string }): ClaimFacts {
    const claim = this.claimOf(target);
    const writes = targetWrites(
      target,
      (b) => this.informers.branches.get(b.name, b.namespace),
      (p) => this.informers.gitProviders.get(p.name, p.namespace),
    );
    return {
      kind: ref.kind,
      name: ref.name,
      ...(claim ? { status: claim.status ?? {} } : {}),
      ...(writes ? { writes } : {}),
    };
  }

  private async release(key: string, cursors: "forget" | "leave" | "readOut" = "forget"): Promise<void> {
    const providerKey = this.servedBy.get(key);
    if (providerKey === undefined) return;
    this.servedBy.delete(key);
    const { namespace, name } = parseKey(key);
    await this.sourceContexts.get(providerKey)?.watchManager.release({ namespace, name }, cursors);
  }
}

/** status.placement, from what the worker last read of the folder. */
function placementStatus(placement: NonNullable<FolderReport["placement"]>) {
  return {
    source: placement.source,
    ...(placement.kustomizeRoot ? { kustomizeRoot: placement.kustomizeRoot } : {}),
    documents: placement.documents,
    ...(placement.commit ? { commit: placement.commit } : {}),
    ...(placement.observedAt ? { observedAt: placement.observedAt.toISOString() } : {}),
  };
}

export function setupGitTargetController(
  manager: Manager,
  sourceContexts: SourceContexts,
  writeSide: WriteSide,
): { controller: Controller; reconciler: GitTargetReconciler } {
  const kc = manager.kubeConfig;
  const informers: Informers = {
    targets: manager.informer<GitTarget>(informerSource(kc, resourceTypes.GitTarget)),
    providers: manager.informer<KubeProvider>(informerSource(kc, resourceTypes.KubeProvider)),
    branches: manager.informer<GitBranch>(informerSource(kc, resourceTypes.GitBranch)),
    gitProviders: manager.informer<GitProvider>(informerSource(kc, resourceTypes.GitProvider)),
    namespaces: manager.informer<V1Namespace>(informerSource(kc, namespaceType)),
    fluxClaims: manager.informer<FluxClaim>(informerSource(kc, resourceTypes.FluxClaim)),
    argoClaims: manager.informer<ArgoCDClaim>(informerSource(kc, resourceTypes.ArgoCDClaim)),
    webhookClaims: manager.informer<WebhookClaim>(informerSource(kc, resourceTypes.WebhookClaim)),
  };
  const { targetsNamingClaim, targetsReferencing, targetsNaming, targetsOfProvider } =
    targetLookups(informers);
  const reconciler = new GitTargetReconciler(
    manager,
    informers,
    sourceContexts,
    writeSide,
    new EventRecorder(kc, hostname(), manager.logger),
  );
  const controller = new Controller(
    "gittarget",
    reconciler,
    manager.logger,
    writeSide.shardOf ? { shardOf: writeSide.shardOf } : {},
  )
    .for(informers.targets, anyOf(generationChanged, reconcileRequested))
    // A sibling's path or deletion decides an overlap, so every target on the branch looks again.
    .watches(
      informers.targets,
      (t) => targetsReferencing("gitBranchRef", refOf(t.spec.gitBranchRef, t.metadata.namespace!)),
      generationChanged,
    )
    .watches(informers.providers, targetsNaming("kubeProviderRef"), anyOf(generationChanged, readyTransition))
    .watches(informers.branches, targetsNaming("gitBranchRef"), anyOf(generationChanged, readyTransition))
    // An applier claim's facts name the repository its targets write, read from the provider.
    .watches(informers.gitProviders, targetsOfProvider, anyOf(generationChanged, readyTransition))
    .watches(
      informers.namespaces,
      (ns) =>
        informers.targets
          .list(ns.metadata?.name)
          .map((t) => ({ namespace: t.metadata.namespace, name: t.metadata.name! })),
      labelsChanged,
    )
    // ApplierClaimReady mirrors the claim's Ready, so its transitions are looked at.
    .watches(informers.fluxClaims, targetsNamingClaim("FluxClaim"), anyOf(generationChanged, readyTransition))
    .watches(
      informers.argoClaims,
      targetsNamingClaim("ArgoCDClaim"),
      anyOf(generationChanged, readyTransition),
    )
    .watches(
      informers.webhookClaims,
      targetsNamingClaim("WebhookClaim"),
      anyOf(generationChanged, readyTransition),
    );
  // A collection finishing its replay, or blocking, changes StreamsRunning: look again at once.
  sourceContexts.onStreamsChanged((t) => controller.queue.add(keyOf(t)));
  writeSide.workers.onTargetChanged((t) => controller.queue.add(keyOf(t)));
  // A worker made, replaced or released by its GitBranch: the branch's targets attach to the new
  // one at once, or say they feed none.
  writeSide.workers.onWorkerChanged((branchKey) => {
    for (const t of targetsReferencing("gitBranchRef", parseKey(branchKey))) controller.queue.add(keyOf(t));
  });
  // A branch claim proved or moved: its targets look again now (the worker it starts or stops
  // wakes them once more). After a restart the GitBranch was Ready all along, so no status
  // transition would say so.
  writeSide.claims.onHolderChanged((_key, candidates) => {
    for (const c of candidates) {
      for (const t of targetsReferencing("gitBranchRef", c)) controller.queue.add(keyOf(t));
    }
  });
  manager.addController(controller);
  return { controller, reconciler };
}

/** Which GitTargets an object of another kind concerns, read from the informers: what the controller's watches map to. */
function targetLookups(informers: Informers) {
  const refs = (targets: GitTarget[]) =>
    targets.map((t) => ({ namespace: t.metadata.namespace, name: t.metadata.name! }));
  /** The targets whose applierClaimRef names the claim. */
  const targetsNamingClaim = (kind: string) => (claim: KubernetesObject) =>
    refs(
      informers.targets
        .list(claim.metadata?.namespace)
        .filter(
          (t) =>
            t.spec.applierClaimRef?.kind === kind && t.spec.applierClaimRef.name === claim.metadata?.name,
        ),
    );
  /** The targets whose `kind` reference names `ref`. */
  const targetsReferencing = (
    kind: "kubeProviderRef" | "gitBranchRef",
    ref: { namespace: string; name: string },
  ) => refs(informers.targets.list().filter((t) => sameRef(refOf(t.spec[kind], t.metadata.namespace!), ref)));
  const targetsNaming = (kind: "kubeProviderRef" | "gitBranchRef") => (object: KubernetesObject) =>
    targetsReferencing(kind, {
      namespace: object.metadata?.namespace ?? "",
      name: object.metadata?.name ?? "",
    });
  /** The targets of every GitBranch on the provider. (Its credential and signing key reach the targets through their GitBranch's worker: onWorkerChanged.) */
  const targetsOfProvider = (provider: GitProvider) =>
    informers.branches
      .list()
      .filter((b) =>
        sameRef(
          refOf(b.spec.gitProviderRef, b.metadata.namespace!),
          refOf({ name: provider.metadata.name! }, provider.metadata.namespace!),
        ),
      )
      .flatMap((b) =>
        targetsReferencing("gitBranchRef", { namespace: b.metadata.namespace!, name: b.metadata.name! }),
      );
  return { targetsNamingClaim, targetsReferencing, targetsNaming, targetsOfProvider };
}
