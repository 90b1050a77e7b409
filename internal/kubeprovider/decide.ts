// The decisions of the KubeProvider reconciler, as pure functions of what it read.
import {
  KubeProviderCondition,
  KubeProviderReason,
  type KubeProvider,
} from "../../generated/v1alpha3/index.ts";
import { progressingTrio, readyTrio, stalledTrio, type ConditionUpdate } from "../operator/conditions.ts";
import { objectKeyOf } from "../types/names.ts";
import { parseDuration } from "../types/units.ts";
import type { ClientLimits } from "../kube/throttle.ts";

export function providerKey(provider: Pick<KubeProvider, "metadata">): string {
  return objectKeyOf(provider);
}

/** The audit route in effect: spec.attribution.auditRoute, or <namespace>.<name>. */
export function auditRouteOf(provider: KubeProvider): string {
  return provider.spec.attribution?.auditRoute ?? `${provider.metadata.namespace}.${provider.metadata.name}`;
}

/**
 * How the provider's client is throttled and bounded: spec.client with the schema's defaults,
 * which also hold when spec.client is omitted (20 qps, a burst of 40, a 30 s timeout).
 */
export function clientLimits(client: KubeProvider["spec"]["client"]): ClientLimits {
  return {
    qps: client?.qps ?? 20,
    burst: client?.burst ?? 40,
    timeoutMs: parseDuration(client?.timeout ?? "30s"),
  };
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

/**
 * AuditFactsReceived, with attribution on: Unknown until the provider's audit route delivers
 * its first fact, then True. Never part of Ready: a cluster that makes no writes sends none.
 */
export function auditFactsCondition(
  route: string,
  lastFactAt: Date | undefined,
  generation: number | undefined,
): ConditionUpdate {
  return lastFactAt
    ? {
        type: KubeProviderCondition.AuditFactsReceived,
        status: "True",
        reason: KubeProviderReason.Succeeded,
        message: `Attribution facts arrive on /audit-webhook/${route}`,
        observedGeneration: generation,
      }
    : {
        type: KubeProviderCondition.AuditFactsReceived,
        status: "Unknown",
        reason: KubeProviderReason.NoFactsYet,
        message: `No attribution fact has arrived on /audit-webhook/${route} yet: point this cluster's kube-apiserver audit webhook there, with a client certificate the audit CA signed`,
        observedGeneration: generation,
      };
}

/**
 * The namespace that holds an audit route: the one its first segment names when a provider
 * there carries it, else the namespace of its oldest carrier (by creationTimestamp, then uid).
 * Providers of that namespace may share the route; any other's facts would be read as its.
 */
export function routeHolder(route: string, providers: readonly KubeProvider[]): string | undefined {
  const carriers = providers.filter((p) => auditRouteOf(p) === route);
  const named = route.split(".")[0];
  if (carriers.some((p) => p.metadata.namespace === named)) return named;
  // The informer may hold the timestamp as the API's string or as a Date.
  const created = (p: KubeProvider) => new Date(p.metadata.creationTimestamp ?? 0).getTime();
  const oldest = [...carriers].sort(
    (a, b) => created(a) - created(b) || (a.metadata.uid ?? "").localeCompare(b.metadata.uid ?? ""),
  )[0];
  return oldest?.metadata.namespace;
}

/** Whether a provider's source-cluster watch serves CommitRequests: a kubeconfig provider that asks. */
export function servesCommitRequests(provider: KubeProvider): boolean {
  const mode = provider.spec.commitRequests ?? "Ignore";
  return mode !== "Ignore" && !provider.spec.inCluster;
}

/**
 * CommitRequestsServed: whether the requests created on the source cluster are watched and
 * served. An inCluster provider's are the control cluster's, which its own reconciler serves.
 */
export function commitRequestsCondition(
  provider: KubeProvider,
  served: "watching" | "starting" | undefined,
  refusal: string | undefined,
): ConditionUpdate {
  const condition = (status: ConditionUpdate["status"], reason: string, message: string) => ({
    type: KubeProviderCondition.CommitRequestsServed,
    status,
    reason,
    message,
    observedGeneration: provider.metadata.generation,
  });
  if ((provider.spec.commitRequests ?? "Ignore") === "Ignore")
    return condition(
      "False",
      KubeProviderReason.NotRequested,
      "spec.commitRequests is Ignore: none are served from this cluster.",
    );
  if (provider.spec.inCluster)
    return condition(
      "True",
      KubeProviderReason.Succeeded,
      "The control cluster's CommitRequests are served by its own reconciler.",
    );
  if (refusal)
    return condition("False", refusal, "The connection may not be used, so no CommitRequest is watched.");
  return served === "watching"
    ? condition(
        "True",
        KubeProviderReason.Succeeded,
        "CommitRequests on the source cluster are watched and served.",
      )
    : condition(
        "Unknown",
        KubeProviderReason.Progressing,
        "The watch of the source cluster's CommitRequests is starting: is the CommitRequest CRD installed there?",
      );
}
