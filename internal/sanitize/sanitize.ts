// The desired-state projection of a live object, which is what gets written to Git. It strips
// what the API server and controllers write at runtime, so that runtime churn (a status
// heartbeat, a new resourceVersion, a rollout counter) never reads as a change somebody made.
import { isDeepStrictEqual } from "node:util";
import type { KubernetesObject } from "@kubernetes/client-node";
import { lastAppliedAnnotation } from "./lastapplied.ts";
import {
  nothingProven,
  splitOwned,
  unownedOf,
  type DefaultVerdict,
  type Defaulted,
  type Unowned,
} from "./owned.ts";

/**
 * An object as a watch delivers it, parsed JSON with whatever fields its kind has; it is
 * assignable to client-node's KubernetesObject.
 */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  [field: string]: unknown;
}

export interface ObjectMeta {
  name?: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  [field: string]: unknown;
}

/** One field `sanitize` strips, and why. */
export interface StripRule {
  /** The field, one segment per map key: an annotation's whole key is one segment. */
  readonly path: readonly string[];
  /** Only objects of this API group ("" for core) and kind; every object when absent. */
  readonly kind?: { readonly group: string; readonly kind: string };
  /** Only when this holds of the live object; always when absent. */
  readonly when?: (live: KubeObject) => boolean;
  readonly reason: string;
}

const service = { group: "", kind: "Service" };
const namespace = { group: "", kind: "Namespace" };
const onlyKubernetesFinalizer = (live: KubeObject) =>
  isDeepStrictEqual(fieldAt(live, ["spec", "finalizers"]), ["kubernetes"]);
const named = (live: KubeObject) => typeof live.metadata?.name === "string" && live.metadata.name !== "";
const notHeadless = (live: KubeObject) => fieldAt(live, ["spec", "clusterIP"]) !== "None";

/** Everything `sanitize` strips, in one place; docs/sanitize.md shows it as a table. */
export const stripRules: readonly StripRule[] = [
  {
    path: ["status"],
    reason: "observed state, written by controllers through the status subresource, not desired state",
  },
  {
    path: ["metadata", "managedFields"],
    reason: "the API server's field-ownership bookkeeping; its timestamps move on every write",
  },
  {
    path: ["metadata", "resourceVersion"],
    reason: "a concurrency token that changes on every write, status-only writes included",
  },
  {
    path: ["metadata", "uid"],
    reason: "assigned at creation: it names this cluster's instance of the object, not the object",
  },
  {
    path: ["metadata", "generation"],
    reason: "counted by the API server on each spec change; it follows the content, it is not content",
  },
  {
    path: ["metadata", "creationTimestamp"],
    reason: "assigned at creation by the API server",
  },
  {
    path: ["metadata", "selfLink"],
    reason:
      "derived from the object's URL; not set by default since Kubernetes 1.20, stripped for older servers",
  },
  {
    path: ["metadata", "deletionTimestamp"],
    reason: "set when deletion starts; deletion is an event of its own, not a change of content",
  },
  {
    path: ["metadata", "deletionGracePeriodSeconds"],
    reason: "set together with deletionTimestamp",
  },
  {
    path: ["metadata", "ownerReferences"],
    reason:
      "they name the live owner by UID, which exists in this cluster only; applied elsewhere, the " +
      "garbage collector would find the owner missing and delete the object",
  },
  {
    path: ["metadata", "generateName"],
    when: named,
    reason:
      "a template for the name at creation; once the server has chosen the name, the name is the identity",
  },
  {
    path: ["metadata", "annotations", lastAppliedAnnotation],
    reason: "client-side kubectl apply's copy of its last input: a second, stale copy of the object",
  },
  {
    path: ["metadata", "annotations", "deployment.kubernetes.io/revision"],
    reason: "the Deployment controller's rollout counter, bumped by every rollout",
  },
  {
    path: ["metadata", "labels", "kustomize.toolkit.fluxcd.io/name"],
    reason:
      "Flux stamps the Kustomization that applied the object on every apply; it names the applier, " +
      "not the object (the watch side reads it before sanitizing, see the applier-claims seed)",
  },
  {
    path: ["metadata", "labels", "kustomize.toolkit.fluxcd.io/namespace"],
    reason: "stamped by Flux together with kustomize.toolkit.fluxcd.io/name",
  },
  {
    path: ["metadata", "annotations", "argocd.argoproj.io/tracking-id"],
    reason:
      "Argo CD stamps the Application that applied the object; it names the applier, not the object " +
      "(the watch side reads it before sanitizing, see the applier-claims seed)",
  },
  {
    path: ["spec", "clusterIP"],
    kind: service,
    when: notHeadless,
    reason:
      "allocated by the API server from this cluster's service range; kept when None, which is the " +
      "user's choice of a headless Service",
  },
  {
    path: ["spec", "clusterIPs"],
    kind: service,
    when: notHeadless,
    reason: "allocated together with spec.clusterIP; kept for a headless Service",
  },
  {
    path: ["metadata", "labels", "kubernetes.io/metadata.name"],
    kind: namespace,
    reason:
      "the API server sets it on every Namespace to the Namespace's name, and keeps it so; " +
      "it repeats the name, and applying without it sets it again",
  },
  {
    path: ["spec", "finalizers"],
    kind: namespace,
    when: onlyKubernetesFinalizer,
    reason:
      "the API server puts the kubernetes finalizer on every Namespace; kept when it lists any " +
      "other, which is somebody's choice",
  },
];

// An empty map and an absent one mean the same; only one of them may reach Git. A Namespace's
// spec is empty once its kubernetes finalizer is stripped; another kind's may be required.
const droppedWhenEmpty: readonly Pick<StripRule, "path" | "kind">[] = [
  { path: ["metadata", "labels"] },
  { path: ["metadata", "annotations"] },
  { path: ["spec"], kind: namespace },
];

/** The desired-state projection, and the proven defaults it leaves out (see owned.ts). */
export interface Projection {
  object: KubeObject;
  defaulted?: Defaulted;
}

/** What a projection is settled from: the object without what stripRules name, and what no manager owns in it. */
export interface Unsettled {
  live: KubeObject;
  stripped: KubeObject;
  unowned?: Unowned;
}

/**
 * `object` with the fields `stripRules` names removed (and a map they leave empty), and what no
 * manager owns in the rest.
 */
export function unsettled(object: KubernetesObject): Unsettled {
  const live = object as KubeObject;
  const stripped = structuredClone(live);
  for (const rule of stripRules) {
    // Conditions read the live object, so one rule's strip never decides another's.
    if (appliesTo(rule, live)) removeAt(stripped, rule.path);
  }
  dropEmptyMaps(stripped, live);
  const unowned = unownedOf(
    stripped,
    live.metadata?.managedFields,
    live.metadata?.annotations?.[lastAppliedAnnotation],
  );
  return { live, stripped, ...(unowned ? { unowned } : {}) };
}

/**
 * The desired-state projection of an unsettled object: without the unowned values `verdict`
 * proves defaults (every other one is kept), and without a labels, annotations or spec map left
 * empty. With nothing unowned it is `stripped` itself, whose content digest no-op suppression
 * took already; otherwise it may change `stripped`: settle an unsettled object once.
 */
export function settle(
  { live, stripped, unowned }: Unsettled,
  verdict: DefaultVerdict = nothingProven,
): Projection {
  if (!unowned) return { object: stripped };
  const { owned, defaulted } = splitOwned(stripped, unowned, verdict);
  dropEmptyMaps(owned, live);
  return { object: owned, ...(defaulted ? { defaulted } : {}) };
}

/** Removes the maps `droppedWhenEmpty` names where `object` holds them empty. */
function dropEmptyMaps(object: KubeObject, live: KubeObject): void {
  for (const empty of droppedWhenEmpty) {
    const map = fieldAt(object, empty.path);
    if (appliesTo(empty, live) && isRecord(map) && Object.keys(map).length === 0)
      removeAt(object, empty.path);
  }
}

/**
 * The desired-state projection of `object`: without the fields `stripRules` names, and without
 * the values no field manager owns that `verdict` proves the API server's defaults. With no
 * verdict nothing is proven, and everything a client may have set is kept.
 */
export function project(object: KubernetesObject, verdict: DefaultVerdict = nothingProven): Projection {
  return settle(unsettled(object), verdict);
}

/** The desired-state projection of `object`, as `project` makes it, without what it left out. */
export function sanitize(object: KubernetesObject, verdict: DefaultVerdict = nothingProven): KubeObject {
  return project(object, verdict).object;
}

function appliesTo(rule: Pick<StripRule, "kind" | "when">, live: KubeObject): boolean {
  if (rule.kind && (groupOf(live.apiVersion) !== rule.kind.group || live.kind !== rule.kind.kind)) {
    return false;
  }
  return rule.when?.(live) ?? true;
}

/** The API group of an apiVersion: "apps" of "apps/v1", "" (core) of "v1". */
function groupOf(apiVersion = ""): string {
  const slash = apiVersion.indexOf("/");
  return slash < 0 ? "" : apiVersion.slice(0, slash);
}

function fieldAt(object: unknown, path: readonly string[]): unknown {
  let value = object;
  for (const segment of path) {
    if (!isRecord(value)) return undefined;
    value = value[segment];
  }
  return value;
}

function removeAt(object: unknown, path: readonly string[]): void {
  const parent = fieldAt(object, path.slice(0, -1));
  if (isRecord(parent)) delete parent[path[path.length - 1]!];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
