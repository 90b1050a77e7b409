// What the reconcilers of both applier claims read alike: the GitTargets naming a claim, with
// what each writes, and the claim's configuration for eligibility; and the two clocks a claim
// keeps in this process, when its hand-back started and how long an operation in flight has
// gone unfollowed.
import type { KubernetesObject, V1Namespace } from "@kubernetes/client-node";
import {
  resourceTypes,
  type ApplierClaimStatus,
  type ApplyOperation,
  type GitBranch,
  type GitProvider,
  type GitTarget,
  type KubeProvider,
} from "../generated/v1alpha3/index.ts";
import type { ClaimConfig, ReferringTarget } from "../internal/applier/eligibility.ts";
import type { Following } from "../internal/applier/following.ts";
import { inFlight } from "../internal/applier/operation.ts";
import { targetWrites } from "../internal/gittarget/claim.ts";
import type { Controller } from "../internal/operator/controller.ts";
import type { SharedInformer } from "../internal/operator/informer.ts";
import type { Manager } from "../internal/operator/manager.ts";
import { anyOf, generationChanged, labelsChanged, readyTransition } from "../internal/operator/predicates.ts";
import { informerSource, namespaceType } from "../internal/kube/sources.ts";
import type { ClaimKind } from "../internal/types/claims.ts";
import { refOf, type NamespacedName } from "../internal/types/names.ts";

export interface ClaimInformers {
  targets: SharedInformer<GitTarget>;
  branches: SharedInformer<GitBranch>;
  gitProviders: SharedInformer<GitProvider>;
  providers: SharedInformer<KubeProvider>;
  namespaces: SharedInformer<V1Namespace>;
}

interface AnyClaim {
  metadata: { namespace?: string; name?: string };
  spec: { kubeProviderRef: { name: string; namespace?: string } };
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
function referringTargets(informers: ClaimInformers, claim: AnyClaim, kind: ClaimKind): ReferringTarget[] {
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
