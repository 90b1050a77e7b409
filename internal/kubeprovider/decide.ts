// The decisions of the KubeProvider reconciler, as pure functions of what it read.
import {
  KubeProviderCondition,
  KubeProviderReason,
  type KubeProvider,
} from "../../generated/v1alpha3/index.ts";
import { progressingTrio, readyTrio, stalledTrio, type ConditionUpdate } from "../operator/conditions.ts";

export function providerKey(provider: Pick<KubeProvider, "metadata">): string {
  return `${provider.metadata.namespace ?? ""}/${provider.metadata.name ?? ""}`;
}

/** The audit route in effect: spec.attribution.auditRoute, or <namespace>.<name>. */
export function auditRouteOf(provider: KubeProvider): string {
  return provider.spec.attribution?.auditRoute ?? `${provider.metadata.namespace}.${provider.metadata.name}`;
}

/**
 * Only a provider the installation lists, by exact namespace/name, may use the operator's own
 * identity: no omitted, malformed or forbidden credential falls through to it.
 */
export function inClusterConsented(provider: KubeProvider, consented: readonly string[]): boolean {
  return consented.includes(providerKey(provider));
}

/** What the reconcile found, from which the status follows. */
export type ProviderOutcome =
  | { kind: "refused"; reason: string; message: string; transient: boolean }
  | { kind: "unreachable"; message: string; server: string }
  | { kind: "ready"; server: string };

export function providerConditions(
  outcome: ProviderOutcome,
  generation: number | undefined,
): ConditionUpdate[] {
  const g = generation;
  switch (outcome.kind) {
    case "refused":
      return [
        ...(outcome.transient
          ? progressingTrio(outcome.reason, outcome.message, g)
          : stalledTrio(outcome.reason, outcome.message, g)),
        {
          type: KubeProviderCondition.Validated,
          status: "False",
          reason: outcome.reason,
          message: outcome.message,
          observedGeneration: g,
        },
        {
          type: KubeProviderCondition.SourceClusterReachable,
          status: "Unknown",
          reason: outcome.reason,
          message: "not checked: the connection is not valid",
          observedGeneration: g,
        },
      ];
    case "unreachable":
      return [
        ...progressingTrio(KubeProviderReason.SourceUnreachable, outcome.message, g),
        {
          type: KubeProviderCondition.Validated,
          status: "True",
          reason: KubeProviderReason.Succeeded,
          message: "",
          observedGeneration: g,
        },
        {
          type: KubeProviderCondition.SourceClusterReachable,
          status: "False",
          reason: KubeProviderReason.SourceUnreachable,
          message: outcome.message,
          observedGeneration: g,
        },
      ];
    case "ready":
      return [
        ...readyTrio(KubeProviderReason.Succeeded, `Connected to ${outcome.server}`, g),
        {
          type: KubeProviderCondition.Validated,
          status: "True",
          reason: KubeProviderReason.Succeeded,
          message: "",
          observedGeneration: g,
        },
        {
          type: KubeProviderCondition.SourceClusterReachable,
          status: "True",
          reason: KubeProviderReason.Succeeded,
          message: "",
          observedGeneration: g,
        },
      ];
  }
}
