// What the FluxClaim reads of Flux's objects, as plain facts. Flux's own behavior, which these
// readings rely on (kustomize-controller v1.x, see the applier-claims seed's source facts):
// reconcile.fluxcd.io/requestedAt is copied to status.lastHandledReconcileAt on every return of
// a reconcile, suspended ones included, and spec.suspend is read only when a reconcile starts.
// So a token handled after a write that set spec.suspend: true proves that every reconcile
// started before that write has ended, and that the object is suspended now.
import type { KubernetesObject } from "@kubernetes/client-node";
import type { ResourceType } from "../../kube/resourceclient.ts";
import type { NamespacedName } from "../../types/names.ts";

export const requestedAtAnnotation = "reconcile.fluxcd.io/requestedAt";

export const kustomizationType: ResourceType = {
  group: "kustomize.toolkit.fluxcd.io",
  version: "v1",
  kind: "Kustomization",
  plural: "kustomizations",
  namespaced: true,
};

export const gitRepositoryType: ResourceType = {
  group: "source.toolkit.fluxcd.io",
  version: "v1",
  kind: "GitRepository",
  plural: "gitrepositories",
  namespaced: true,
};

interface FluxCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  fieldsV1?: { "f:spec"?: Record<string, unknown> };
}

export interface Kustomization extends KubernetesObject {
  spec?: {
    suspend?: boolean;
    sourceRef?: { kind?: string; name?: string; namespace?: string };
    path?: string;
  };
  status?: {
    lastHandledReconcileAt?: string;
    lastAppliedRevision?: string;
    conditions?: FluxCondition[];
    history?: { digest?: string; lastReconciled?: string; totalReconciliations?: number }[];
  };
}

export interface GitRepository extends KubernetesObject {
  spec?: {
    url?: string;
    ref?: { branch?: string; tag?: string; semver?: string; name?: string; commit?: string };
  };
  status?: { artifact?: { revision?: string }; lastHandledReconcileAt?: string };
}

export interface KustomizationView {
  ref: NamespacedName;
  uid: string;
  resourceVersion: string;
  suspended: boolean;
  /** The newest token stamped on it, ours or anybody's. */
  requestedAt?: string;
  lastHandled?: string;
  source: { kind: string; namespace: string; name: string };
  /** Field managers other than ours whose Apply entry owns spec.suspend. */
  suspendAppliedBy: string[];
  /** Whether our own Apply entry owns spec.suspend: the claim has held it. */
  heldByUs: boolean;
  ready?: FluxCondition;
  lastAppliedRevision?: string;
  /** The newest status.history entry, as one string: it moves with every reconcile that applied. */
  historyTop?: string;
  /** When the newest status.history entry was last reconciled. */
  historyReconciledAt?: string;
}

const ownsSuspend = (entry: ManagedFieldsEntry) =>
  Object.hasOwn(entry.fieldsV1?.["f:spec"] ?? {}, "f:suspend");

export function viewKustomization(k: Kustomization, fieldManager: string): KustomizationView {
  const namespace = k.metadata?.namespace ?? "";
  const entries = (k.metadata?.managedFields ?? []) as ManagedFieldsEntry[];
  const appliers = entries.filter((e) => e.operation === "Apply" && ownsSuspend(e));
  return {
    ref: { namespace, name: k.metadata?.name ?? "" },
    uid: k.metadata?.uid ?? "",
    resourceVersion: k.metadata?.resourceVersion ?? "",
    suspended: k.spec?.suspend === true,
    ...optional("requestedAt", k.metadata?.annotations?.[requestedAtAnnotation]),
    ...optional("lastHandled", k.status?.lastHandledReconcileAt),
    source: {
      kind: k.spec?.sourceRef?.kind ?? "",
      namespace: k.spec?.sourceRef?.namespace ?? namespace,
      name: k.spec?.sourceRef?.name ?? "",
    },
    suspendAppliedBy: appliers.map((e) => e.manager ?? "").filter((m) => m !== fieldManager),
    heldByUs: appliers.some((e) => e.manager === fieldManager),
    ...optional(
      "ready",
      k.status?.conditions?.find((c) => c.type === "Ready"),
    ),
    ...optional("lastAppliedRevision", k.status?.lastAppliedRevision),
    ...optional("historyTop", historyTopOf(k)),
    ...optional("historyReconciledAt", k.status?.history?.[0]?.lastReconciled),
  };
}

function historyTopOf(k: Kustomization): string | undefined {
  const top = k.status?.history?.[0];
  return top ? `${top.digest ?? ""}/${top.totalReconciliations ?? 0}/${top.lastReconciled ?? ""}` : undefined;
}

/**
 * Whether the Kustomization is suspended and the newest token on it has been handled: every
 * reconcile that started before the suspend has ended.
 */
export function suspendHandled(k: KustomizationView): boolean {
  return k.suspended && k.requestedAt !== undefined && k.lastHandled === k.requestedAt;
}

export interface GitRepositoryView {
  ref: NamespacedName;
  url: string;
  /** The branch it follows; undefined when it pins a tag, a semver range, a ref name or a commit. */
  branch?: string;
  revision?: string;
  lastHandled?: string;
}

export function viewGitRepository(r: GitRepository): GitRepositoryView {
  const ref = r.spec?.ref;
  const pinned = ref?.tag ?? ref?.semver ?? ref?.name ?? ref?.commit;
  // A commit, ref name, semver range or tag takes precedence over a branch; with none of them
  // and no branch, source-controller fetches master.
  const branch = pinned === undefined ? (ref?.branch ?? "master") : undefined;
  return {
    ref: { namespace: r.metadata?.namespace ?? "", name: r.metadata?.name ?? "" },
    url: r.spec?.url ?? "",
    ...optional("branch", branch),
    ...optional("revision", r.status?.artifact?.revision),
    ...optional("lastHandled", r.status?.lastHandledReconcileAt),
  };
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
