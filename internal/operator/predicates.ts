// Which updates of a watched object are worth a reconcile. A controller that reacted to every
// status heartbeat of its dependencies would spend its queue on nothing.
import type { KubernetesObject } from "@kubernetes/client-node";
import { findCondition, type Condition } from "./conditions.ts";

/** The few facts of an object that predicates compare across an update. */
export interface ObjectFacts {
  generation: number | undefined;
  labels: Record<string, string>;
  ready: string | undefined;
  deleting: boolean;
  /** The reconcile.configbutler.ai/requestedAt annotation: a person asking for a re-check now. */
  requestedAt: string | undefined;
}

export const requestedAtAnnotation = "reconcile.configbutler.ai/requestedAt";

export function factsOf(object: KubernetesObject & { status?: unknown }): ObjectFacts {
  const conditions = (object as { status?: { conditions?: Condition[] } }).status?.conditions;
  return {
    generation: object.metadata?.generation,
    labels: object.metadata?.labels ?? {},
    ready: findCondition(conditions, "Ready")?.status,
    deleting: object.metadata?.deletionTimestamp !== undefined,
    requestedAt: object.metadata?.annotations?.[requestedAtAnnotation],
  };
}

/** Decides whether an update (from `before` to the object now) should be reconciled. */
export type UpdatePredicate = (before: ObjectFacts, after: ObjectFacts) => boolean;

/** The spec changed (or deletion started): the API server bumps generation for spec changes only. */
export const generationChanged: UpdatePredicate = (before, after) =>
  before.generation !== after.generation || before.deleting !== after.deleting;

export const labelsChanged: UpdatePredicate = (before, after) => {
  const keys = new Set([...Object.keys(before.labels), ...Object.keys(after.labels)]);
  for (const key of keys) if (before.labels[key] !== after.labels[key]) return true;
  return false;
};

/** Somebody set reconcile.configbutler.ai/requestedAt to a new value: re-check now. */
export const reconcileRequested: UpdatePredicate = (before, after) =>
  before.requestedAt !== after.requestedAt;

/** The Ready condition's status moved, such as a dependency becoming Ready. */
export const readyTransition: UpdatePredicate = (before, after) => before.ready !== after.ready;

export function anyOf(...predicates: UpdatePredicate[]): UpdatePredicate {
  return (before, after) => predicates.some((p) => p(before, after));
}
