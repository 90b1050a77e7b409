// Which types the operator may mirror at all. A type that is not followable never gets a
// watch, whatever a rule selects: mirroring it would write churn, or state a controller owns,
// into Git.

/** A served resource, as discovery describes it. */
export interface ServedType {
  group: string;
  version: string;
  resource: string;
  kind: string;
  namespaced: boolean;
  verbs: string[];
}

/** Types that are never mirrored, each with the reason. Keys are "group/resource" ("" is core). */
export const neverFollowed: Record<string, string> = {
  "/events": "a record of what happened, written by controllers on every action; not desired state",
  "events.k8s.io/events": "the same events, in their newer API",
  "coordination.k8s.io/leases": "heartbeats of leader election and node liveness, renewed every few seconds",
  "/endpoints": "derived by the endpoints controller from Services and Pods",
  "discovery.k8s.io/endpointslices": "derived by the EndpointSlice controller from Services and Pods",
  "apps/controllerrevisions": "revision history a workload controller keeps for rollbacks",
  "/componentstatuses": "a deprecated health probe of control-plane components",
  "configbutler.ai/commitrequests": "a one-shot command to this operator, never state to mirror",
  "metrics.k8s.io/pods": "live resource usage, not desired state",
  "metrics.k8s.io/nodes": "live resource usage, not desired state",
};

/**
 * Kinds whose objects are mirrored only when no controller owns them: a Pod a ReplicaSet
 * created, or a ReplicaSet a Deployment created, is the controller's output, and its owner is
 * what Git should hold. An unowned Pod is somebody's desired state and is mirrored.
 */
export const followedOnlyWhenUnowned: ReadonlySet<string> = new Set(["/pods", "apps/replicasets"]);

export type Followability = { followable: true } | { followable: false; reason: string };

export function followability(type: ServedType): Followability {
  if (type.resource.includes("/")) return { followable: false, reason: "a subresource" };
  if (!type.verbs.includes("list") || !type.verbs.includes("watch")) {
    return { followable: false, reason: "cannot be listed and watched" };
  }
  const never = neverFollowed[`${type.group}/${type.resource}`];
  return never ? { followable: false, reason: never } : { followable: true };
}

/** Whether an object is another controller's output, by a controller owner reference. */
export function isControllerOwned(object: {
  metadata?: { ownerReferences?: { controller?: boolean }[] };
}): boolean {
  return object.metadata?.ownerReferences?.some((ref) => ref.controller === true) ?? false;
}
