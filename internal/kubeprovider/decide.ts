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
  const condition = (
    type: string,
    status: ConditionUpdate["status"],
    reason: string,
    message: string,
  ): ConditionUpdate => ({
    type,
    status,
    reason,
    message,
    observedGeneration: generation,
  });
  const { Validated, SourceClusterReachable } = KubeProviderCondition;
  switch (outcome.kind) {
    case "refused":
      return [
        ...(outcome.transient
          ? progressingTrio(outcome.reason, outcome.message, generation)
          : stalledTrio(outcome.reason, outcome.message, generation)),
        condition(Validated, "False", outcome.reason, outcome.message),
        condition(
          SourceClusterReachable,
          "Unknown",
          outcome.reason,
          "not checked: the connection is not valid",
        ),
      ];
    case "unreachable":
      return [
        ...progressingTrio(KubeProviderReason.SourceUnreachable, outcome.message, generation),
        condition(Validated, "True", KubeProviderReason.Succeeded, ""),
        condition(SourceClusterReachable, "False", KubeProviderReason.SourceUnreachable, outcome.message),
      ];
    case "ready":
      return [
        ...readyTrio(KubeProviderReason.Succeeded, `Connected to ${outcome.server}`, generation),
        condition(Validated, "True", KubeProviderReason.Succeeded, ""),
        condition(SourceClusterReachable, "True", KubeProviderReason.Succeeded, ""),
      ];
  }
}
