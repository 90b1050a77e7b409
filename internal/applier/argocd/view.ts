// What the ArgoCDClaim reads of an Argo CD Application, as plain facts. Every rule here is Argo
// CD's own (3.5.0, applier-claims.md "The Argo CD applier", whose fact table is the spec):
// automated sync is on when syncPolicy.automated is present and its enabled is unset or true;
// an ApplicationSet is the controller owner of every Application it generates; a sync is the
// top-level operation field, copied with its info into status.operationState when the
// controller starts it, and cleared once it completed.
import type { KubernetesObject } from "@kubernetes/client-node";
import type { ResourceType } from "../../kube/resourceclient.ts";
import type { NamespacedName } from "../../types/names.ts";

export const applicationType: ResourceType = {
  group: "argoproj.io",
  version: "v1alpha1",
  kind: "Application",
  plural: "applications",
  namespaced: true,
};

/** An annotation that asks the application controller to compare again; it never syncs. */
export const refreshAnnotation = "argocd.argoproj.io/refresh";
/** The name of the operation info entry that carries our token. */
export const tokenInfo = "gitops-reverser.configbutler.ai/token";
/** Who a sync we start is initiated by (applier-claims.md, decided 2026-10-17). */
export const initiator = "gitops-reverser";

export interface SyncRetry {
  limit?: number;
  backoff?: { duration?: string; factor?: number; maxDuration?: string };
  refresh?: boolean;
}

export interface Operation {
  sync?: { revision?: string; prune?: boolean; syncOptions?: string[] };
  initiatedBy?: { username?: string; automated?: boolean };
  info?: { name: string; value: string }[];
  retry?: SyncRetry;
}

export interface OperationState {
  operation?: Operation;
  phase?: string;
  message?: string;
  startedAt?: string;
  finishedAt?: string;
  syncResult?: { revision?: string };
}

export interface Application extends KubernetesObject {
  spec?: {
    project?: string;
    source?: { repoURL?: string; targetRevision?: string; path?: string };
    sources?: unknown[];
    sourceHydrator?: unknown;
    syncPolicy?: {
      automated?: { enabled?: boolean; prune?: boolean; selfHeal?: boolean; allowEmpty?: boolean };
      syncOptions?: string[];
      retry?: SyncRetry;
    };
    [field: string]: unknown;
  };
  operation?: Operation;
  status?: { operationState?: OperationState; [field: string]: unknown };
}

interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  fieldsV1?: { "f:spec"?: { "f:syncPolicy"?: { "f:automated"?: Record<string, unknown> } } };
}

export interface ApplicationView {
  ref: NamespacedName;
  uid: string;
  resourceVersion: string;
  /** Argo CD's IsAutomatedSyncEnabled: syncPolicy.automated present, and enabled unset or true. */
  automatedOn: boolean;
  /** syncPolicy.automated.prune: a sync we start prunes only with the automated block saying so. */
  prune: boolean;
  /** Field managers other than ours whose Apply entry owns syncPolicy.automated.enabled. */
  switchAppliedBy: string[];
  /** Whether our own Apply entry owns the switch: the claim holds it. */
  heldByUs: boolean;
  /** The ApplicationSet that generated it (its controller owner), if one did. */
  applicationSet?: string;
  /** Why its source cannot be coordinated: several sources, or a source hydrator. */
  unsupportedSource?: string;
  source: { repoURL: string; targetRevision: string; path: string };
  /** A sync is set (somebody's, or ours), and not completed. */
  operationSet: boolean;
}

const ownsSwitch = (entry: ManagedFieldsEntry) =>
  Object.hasOwn(entry.fieldsV1?.["f:spec"]?.["f:syncPolicy"]?.["f:automated"] ?? {}, "f:enabled");

export function viewApplication(app: Application, fieldManager: string): ApplicationView {
  const entries = (app.metadata?.managedFields ?? []) as ManagedFieldsEntry[];
  const appliers = entries.filter((e) => e.operation === "Apply" && ownsSwitch(e));
  const automated = app.spec?.syncPolicy?.automated;
  const owner = app.metadata?.ownerReferences?.find((o) => o.controller && o.kind === "ApplicationSet");
  const source = app.spec?.source;
  const unsupported =
    (app.spec?.sources?.length ?? 0) > 0
      ? "it has several sources (spec.sources)"
      : app.spec?.sourceHydrator !== undefined
        ? "it uses a source hydrator (spec.sourceHydrator)"
        : !source
          ? "it has no spec.source"
          : undefined;
  return {
    ref: { namespace: app.metadata?.namespace ?? "", name: app.metadata?.name ?? "" },
    uid: app.metadata?.uid ?? "",
    resourceVersion: app.metadata?.resourceVersion ?? "",
    automatedOn: automated !== undefined && automated !== null && automated.enabled !== false,
    prune: automated?.prune === true,
    switchAppliedBy: appliers.map((e) => e.manager ?? "").filter((m) => m !== fieldManager),
    heldByUs: appliers.some((e) => e.manager === fieldManager),
    ...(owner ? { applicationSet: owner.name } : {}),
    ...(unsupported ? { unsupportedSource: unsupported } : {}),
    source: {
      repoURL: source?.repoURL ?? "",
      targetRevision: source?.targetRevision ?? "",
      path: source?.path ?? "",
    },
    operationSet: app.operation !== undefined && app.operation !== null,
  };
}

/**
 * The branch the Application's source follows, or undefined when it pins a tag or a commit, or
 * follows HEAD (the repository's default branch, which only the Git host knows): a claim needs
 * the branch named, so it can tell the GitTarget writes it.
 */
export function branchOf(targetRevision: string): string | undefined {
  const revision = targetRevision.startsWith("refs/heads/")
    ? targetRevision.slice("refs/heads/".length)
    : targetRevision;
  if (revision === "" || revision === "HEAD") return undefined;
  if (/^[0-9a-f]{40}$/.test(revision) || revision.startsWith("refs/tags/")) return undefined;
  return revision;
}

/** The token a sync carries, in its info. */
export function tokenOf(operation: Operation | undefined): string | undefined {
  return operation?.info?.find((i) => i.name === tokenInfo)?.value;
}
