// What the reconcilers of both applier claims read alike: the GitTargets naming a claim, with
// what each writes, and the claim's configuration for eligibility; and the two clocks a claim
// keeps in this process, when its hand-back started and how long an operation in flight has
// gone unfollowed.
import type { KubeConfig, KubernetesObject, V1Namespace } from "@kubernetes/client-node";
import {
  resourceTypes,
  type ApplierClaimStatus,
  type ApplyOperation,
  type GitBranch,
  type GitProvider,
  type GitTarget,
  type KubeProvider,
} from "../generated/v1alpha3/index.ts";
import type { AnyClaim } from "../internal/applier/dispatch/index.ts";
import {
  inFlight,
  judgeConfig,
  line,
  type ClaimConfig,
  type ReferringTarget,
  type Verdict,
} from "../internal/applier/decide/index.ts";
import type { ClaimDecision, Following } from "../internal/applier/claim/index.ts";
import { targetWrites } from "../internal/gittarget/claim.ts";
import { Controller, type Reconciler, type Request, type Result } from "../internal/operator/controller.ts";
import { EventRecorder } from "../internal/operator/events.ts";
import { unlessNotFound, type ResourceClient, type ResourceType } from "../internal/kube/resourceclient.ts";
import { ensureFinalizer, removeFinalizerPatch } from "../internal/operator/finalizers.ts";
import { StatusWriter } from "../internal/operator/status.ts";
import type { ConditionUpdate } from "../internal/operator/conditions.ts";
import type { SourceContext, SourceContexts } from "../internal/watch/sourcecontexts.ts";
import type { SharedInformer } from "../internal/operator/informer.ts";
import type { Manager } from "../internal/operator/manager.ts";
import { anyOf, generationChanged, labelsChanged, readyTransition } from "../internal/operator/predicates.ts";
import { informerSource, namespaceType } from "../internal/kube/sources.ts";
import type { ClaimKind } from "../internal/types/claims.ts";
import { keyOf, refOf, type NamespacedName } from "../internal/types/names.ts";
import { hostname } from "node:os";
import { fieldManager } from "../internal/operator/fieldmanager.ts";

export interface ClaimInformers {
  targets: SharedInformer<GitTarget>;
  branches: SharedInformer<GitBranch>;
  gitProviders: SharedInformer<GitProvider>;
  providers: SharedInformer<KubeProvider>;
  namespaces: SharedInformer<V1Namespace>;
}

/** Whether a GitTarget names the claim `name` of `kind`. */
export const namesClaim = (target: GitTarget, kind: ClaimKind, name: string) =>
  target.spec.applierClaimRef?.kind === kind && target.spec.applierClaimRef.name === name;

/** The claim's configuration, for eligibility: who names it, and its KubeProvider's grants. */
export function claimConfig(
  informers: ClaimInformers,
  claim: AnyClaim,
  kind: ClaimKind,
  applier: NamespacedName,
): ClaimConfig {
  const namespace = claim.metadata.namespace!;
  const providerRef = refOf(claim.spec.kubeProviderRef, namespace);
  return {
    claim: { namespace, name: claim.metadata.name! },
    targets: referringTargets(informers, claim, kind),
    providerRef,
    provider: informers.providers.get(providerRef.name, providerRef.namespace),
    namespaceLabels: informers.namespaces.get(namespace)?.metadata?.labels ?? {},
    applier,
  };
}

/** The GitTargets naming the claim and not being deleted, with what each writes. */
export function referringTargets(
  informers: ClaimInformers,
  claim: AnyClaim,
  kind: ClaimKind,
): ReferringTarget[] {
  return informers.targets
    .list(claim.metadata.namespace)
    .filter((t) => namesClaim(t, kind, claim.metadata.name!) && !t.metadata.deletionTimestamp)
    .map((t) => {
      const writes = targetWrites(
        t,
        (b) => informers.branches.get(b.name, b.namespace),
        (p) => informers.gitProviders.get(p.name, p.namespace),
      );
      return {
        ref: { namespace: t.metadata.namespace!, name: t.metadata.name! },
        uid: t.metadata.uid ?? "",
        ...(writes ? { writes } : {}),
      };
    });
}

/** When each claim's hand-back started (its 10-minute budget), and how long operations went unfollowed. */
export class ClaimClocks {
  private readonly releasing = new Map<string, Date>();
  /** When each operation in flight was first seen unfollowed by this process, by request token. */
  private readonly unfollowedSince = new Map<string, number>();

  constructor(private readonly following: Following) {}

  releasingSince(key: string): Date | undefined {
    return this.releasing.get(key);
  }

  /** Starts the budget when InControl turns Releasing, and forgets it once it is not. */
  trackRelease(key: string, releasing: boolean): void {
    if (!releasing) this.releasing.delete(key);
    else if (!this.releasing.has(key)) this.releasing.set(key, new Date());
  }

  forget(key: string): void {
    this.releasing.delete(key);
  }

  /** How long the claim's worker operation in flight has gone unfollowed by this process's dispatcher. */
  unfollowedMs(operation: ApplyOperation | undefined, now: number): number {
    const token = operation && inFlight(operation) ? operation.requestToken : undefined;
    if (!token || this.following.has(token)) {
      if (token) this.unfollowedSince.delete(token);
      return 0;
    }
    const since = this.unfollowedSince.get(token) ?? now;
    this.unfollowedSince.set(token, since);
    return now - since;
  }
}

/**
 * The status fields a claim's pass writes: the source as read (or as last read), how the applier
 * stood before the claim held it (null: forgotten, on hand-back), the operation as decided or as
 * recorded, and repairPending kept as the worker last wrote it.
 */
export function claimStatusFields(
  current: ApplierClaimStatus,
  decided: { previousSuspendState?: "Suspended" | "Active" | null; operation?: ApplyOperation },
  source: ApplierClaimStatus["source"] | undefined,
): Record<string, unknown> {
  const previous =
    decided.previousSuspendState === null
      ? undefined
      : (decided.previousSuspendState ?? current.previousSuspendState);
  const operation = decided.operation ?? current.operation;
  const shown = source ?? current.source;
  return {
    ...(shown ? { source: shown } : {}),
    ...(previous ? { previousSuspendState: previous } : {}),
    ...(operation ? { operation } : {}),
    ...(current.repairPending !== undefined ? { repairPending: current.repairPending } : {}),
  };
}

/** The shared informers a claim's eligibility reads. */
export function claimInformers(manager: Manager): ClaimInformers {
  const kc = manager.kubeConfig;
  return {
    targets: manager.informer<GitTarget>(informerSource(kc, resourceTypes.GitTarget)),
    branches: manager.informer<GitBranch>(informerSource(kc, resourceTypes.GitBranch)),
    gitProviders: manager.informer<GitProvider>(informerSource(kc, resourceTypes.GitProvider)),
    providers: manager.informer<KubeProvider>(informerSource(kc, resourceTypes.KubeProvider)),
    namespaces: manager.informer<V1Namespace>(informerSource(kc, namespaceType)),
  };
}

/**
 * Watches what eligibility reads, mapped to the claims of `kind`: a GitTarget (before and after
 * an update, so one that moves its reference re-runs both claims), GitBranches, GitProviders,
 * KubeProviders and namespace labels.
 */
export function watchClaimInputs<T extends KubernetesObject>(
  controller: Controller,
  informers: ClaimInformers,
  claims: SharedInformer<T>,
  kind: ClaimKind,
): Controller {
  const claimsIn = (namespace: string | undefined) =>
    claims.list(namespace).map((c) => ({ namespace: c.metadata?.namespace, name: c.metadata!.name! }));
  const everyClaim = () => claimsIn(undefined);
  const claimsOfTarget = (t: GitTarget) =>
    t.spec.applierClaimRef?.kind === kind
      ? [{ namespace: t.metadata.namespace, name: t.spec.applierClaimRef.name }]
      : [];
  return controller
    .watches(informers.targets, claimsOfTarget, generationChanged)
    .watches(informers.branches, everyClaim, generationChanged)
    .watches(informers.gitProviders, everyClaim, generationChanged)
    .watches(informers.providers, everyClaim, anyOf(generationChanged, readyTransition))
    .watches(informers.namespaces, (ns: KubernetesObject) => claimsIn(ns.metadata?.name), labelsChanged);
}

/**
 * Where a claim stands in the line for its applier in one cluster (internal/applier/decide/line.ts):
 * the claim that holds the applier when it is another (only for a bound claim), and whether
 * another eligible claim could take it over. A FluxClaim's line puts a claim with an operation in
 * flight first, then one carrying its finalizer; an ArgoCDClaim's has neither rule (`finalizer`
 * undefined), so the oldest eligible claim holds the Application.
 */
export function placeInLine<C extends AnyClaim>(
  claims: readonly C[],
  self: C,
  sourceContexts: SourceContexts,
  applierOf: (claim: C) => NamespacedName,
  where: { server: string | undefined; verdict: Verdict; finalizer?: string },
): { heldBy?: NamespacedName; successor: boolean } {
  if (!where.server) return { successor: false };
  const applier = keyOf(applierOf(self));
  const same = claims.filter((c) => {
    const context = sourceContexts.get(keyOf(refOf(c.spec.kubeProviderRef, c.metadata.namespace!)));
    return context?.server === where.server && keyOf(applierOf(c)) === applier;
  });
  const queue = line(
    same.map((c) => ({
      claim: { namespace: c.metadata.namespace!, name: c.metadata.name! },
      creationTimestamp: new Date(c.metadata.creationTimestamp ?? 0).toISOString(),
      operationInFlight:
        where.finalizer !== undefined && c.status?.operation !== undefined && inFlight(c.status.operation),
      holdsFinalizer:
        where.finalizer !== undefined && (c.metadata.finalizers?.includes(where.finalizer) ?? false),
      // As the claim's own reconciler last judged it: Configured, or refused only for the line.
      eligible: ["Succeeded", "HeldByAnotherClaim"].includes(
        c.status?.conditions?.find((x) => x.type === "Configured")?.reason ?? "",
      ),
    })),
  );
  const key = keyOf(self.metadata);
  const first = queue[0]?.claim;
  return {
    ...(first && keyOf(first) !== key && where.verdict.kind === "bound" ? { heldBy: first } : {}),
    successor: queue.some((c) => keyOf(c.claim) !== key && c.eligible),
  };
}

/**
 * The connection to the claim's applier cluster, unless the claim's configuration settles it
 * without one: a claim nothing names or its KubeProvider refuses reads nothing there unless it
 * holds its applier (it must hand it back), and a KubeProvider not connected yet is pending.
 */
function connect(
  sourceContexts: SourceContexts,
  config: ClaimConfig,
  early: Verdict | undefined,
  holding: boolean,
): { settled: Verdict } | { context: SourceContext } {
  if (early && !holding) return { settled: early };
  const context = sourceContexts.get(keyOf(config.providerRef));
  if (context) return { context };
  return {
    settled: early ?? {
      kind: "pending",
      reason: "NotBound",
      message: `KubeProvider ${keyOf(config.providerRef)} is not connected yet.`,
    },
  };
}

/** What reading a claim's applier came to. */
export type ApplierRead<Client, Raw> =
  /** Settled without reading it, or it does not exist: the reading as it is. */
  | { reading: { verdict: Verdict; applierMissing: boolean; client?: Client; server?: string } }
  /** Read: its cluster's client and server, the object, and the configuration's verdict, if it gave one. */
  | { client: Client; server: string; raw: Raw; early?: Verdict };

/**
 * Both claims' first steps: the configuration judged, the applier's cluster connected (or the
 * claim settled without it, as `connect` says), and the applier read there; one that does not
 * exist is ApplierNotFound, unless the configuration already judged the claim.
 */
export async function readApplier<Client, Raw>(
  sourceContexts: SourceContexts,
  config: ClaimConfig,
  holding: boolean,
  applier: {
    /** What the applier is called in a message: Kustomization, Application. */
    noun: string;
    open: (kubeConfig: KubeConfig) => Client;
    get: (client: Client) => Promise<Raw | undefined>;
  },
): Promise<ApplierRead<Client, Raw>> {
  const early = judgeConfig(config);
  const connection = connect(sourceContexts, config, early, holding);
  if ("settled" in connection) return { reading: { verdict: connection.settled, applierMissing: false } };
  const { kubeConfig, server } = connection.context;
  const client = applier.open(kubeConfig);
  const raw = await applier.get(client);
  if (!raw) {
    const message = `${applier.noun} ${keyOf(config.applier)} does not exist.`;
    const verdict: Verdict = early ?? { kind: "refused", reason: "ApplierNotFound", message };
    return { reading: { client, server, verdict, applierMissing: true } };
  }
  return { client, server, raw, ...(early ? { early } : {}) };
}

/** Writes a claim's conditions and status fields, onto the version the decision was made from. */
export async function writeClaimStatus<C extends AnyClaim>(
  status: StatusWriter,
  client: ResourceClient<C>,
  claim: C,
  decision: {
    conditions: ConditionUpdate[];
    previousSuspendState?: "Suspended" | "Active" | null;
    operation?: ApplyOperation;
  },
  source: ApplierClaimStatus["source"] | undefined,
): Promise<void> {
  await status.write(
    client,
    claim,
    { conditions: decision.conditions, fields: claimStatusFields(claim.status ?? {}, decision, source) },
    true,
  );
}

/**
 * Registers a claim kind's controller: its reconciler over the kind's informer and the shared
 * ones, watching what eligibility reads.
 */
export function setupClaimController<C extends AnyClaim>(
  manager: Manager,
  name: string,
  kind: ClaimKind,
  type: ResourceType,
  reconciler: (
    informers: ClaimInformers & { claims: SharedInformer<C> },
    events: EventRecorder,
  ) => Reconciler,
  /** With more than one replica: a claim's shard, its first GitTarget's repository branch. */
  shardOf?: (request: Request) => string | undefined,
): Controller {
  const kc = manager.kubeConfig;
  const events = new EventRecorder(kc, hostname(), manager.logger);
  const informers = { claims: manager.informer<C>(informerSource(kc, type)), ...claimInformers(manager) };
  const controller = watchClaimInputs(
    new Controller(name, reconciler(informers, events), manager.logger, shardOf ? { shardOf } : {}).for(
      informers.claims,
      generationChanged,
    ),
    informers,
    informers.claims,
    kind,
  );
  manager.addController(controller);
  return controller;
}

/** --applier-claim-recheck-interval's default. */
const steadyRecheckMs = 60_000;
const soonRecheckMs = 1_000;

/**
 * A claim kind's reconciler, read top to bottom: load the claim, read its applier, decide, act,
 * write status. A claim Ready reads its applier every `recheckMs` (a minute unless
 * --applier-claim-recheck-interval says otherwise), which bounds how long a change to the
 * applier made by hand (a resume, automated sync switched on) goes unanswered.
 */
export abstract class ClaimReconciler<
  C extends AnyClaim,
  R extends { source?: ApplierClaimStatus["source"] },
  D extends ClaimDecision,
> implements Reconciler {
  protected readonly status = new StatusWriter(fieldManager);
  protected readonly clocks: ClaimClocks;

  constructor(
    protected readonly manager: Manager,
    protected readonly informers: ClaimInformers & { claims: SharedInformer<C> },
    protected readonly sourceContexts: SourceContexts,
    protected readonly events: EventRecorder,
    following: Following,
    private readonly recheckMs = steadyRecheckMs,
  ) {
    this.clocks = new ClaimClocks(following);
  }

  async reconcile(request: Request): Promise<Result> {
    const key = keyOf(request);
    const cached = this.informers.claims.get(request.name, request.namespace);
    if (!cached) {
      this.clocks.forget(key);
      return {};
    }
    const reading = await this.read(cached);
    const claim = await this.judged(cached, reading);
    if (!claim) return {};
    const decision = this.decide(claim, reading);
    const stored = await this.act(claim, reading, decision);
    if (stored) await this.writeStatus(stored, reading, decision);
    this.clocks.trackRelease(
      key,
      decision.conditions.some((c) => c.type === "InControl" && c.reason === "Releasing"),
    );
    return { requeueAfterMs: decision.soon ? soonRecheckMs : this.recheckMs };
  }

  /** What is read in the applier's cluster, when the claim's configuration lets it read. */
  protected abstract read(claim: C): Promise<R>;
  protected abstract decide(claim: C, reading: R): D;
  /** Makes the decision's write to the applier, if its step is one. */
  protected abstract write(step: D["step"], reading: R): Promise<void>;
  protected abstract client(): ResourceClient<C>;
  /** The finalizer the claim holds its applier behind, until it has handed it back. */
  protected abstract readonly finalizer: string;

  /**
   * Carries the decision's step out, with its Event; returns the claim as stored, or undefined
   * once its finalizer is gone (its status written first: a deleted claim is gone with it).
   */
  private async act(claim: C, reading: R, decision: D): Promise<C | undefined> {
    const client = this.client();
    const { step, event } = decision;
    let stored: C | undefined = claim;
    if (step.kind === "addFinalizer") stored = await ensureFinalizer(client, claim, this.finalizer);
    await this.write(step, reading);
    if (event) await this.events.record(claim, event.type, event.reason, "Hold", event.note);
    if (step.kind === "removeFinalizer") {
      if (!claim.metadata.deletionTimestamp) await this.writeStatus(claim, reading, decision);
      await unlessNotFound(client.jsonPatch(claim, removeFinalizerPatch(claim, this.finalizer)));
      stored = undefined;
    }
    return stored;
  }

  /** The claim the decision is made on: the cached one, unless a kind needs it read uncached. */
  protected judged(cached: C, _reading: R): Promise<C | undefined> {
    return Promise.resolve(cached);
  }

  protected async writeStatus(claim: C, reading: R, decision: D): Promise<void> {
    await writeClaimStatus(this.status, this.client(), claim, decision, reading.source);
  }
}
