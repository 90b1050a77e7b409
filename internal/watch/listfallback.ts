// The LIST fallback's ordering rule. For an API server that refuses streaming initialization, a
// collection first opens a watch and holds its events, then takes a LIST snapshot: every change
// after the LIST's resourceVersion is then in the LIST or among the held events, and the held
// events newer than the LIST are applied on top of the snapshot, in the watch's order.

import type { KubernetesObject } from "@kubernetes/client-node";
import type { Collection } from "../stream/collection.ts";
import { laterRevision, orderable } from "../types/revision.ts";

/**
 * A LIST item as a watch event would carry it. A LIST of a built-in kind leaves apiVersion and
 * kind off its items (the list carries them once), and sanitize's kind-scoped rules and the
 * manifest written to Git need both.
 */
export function asWatched(item: KubernetesObject, collection: Collection): KubernetesObject {
  const { group, version, kind } = collection;
  return { ...item, apiVersion: group === "" ? version : `${group}/${version}`, kind };
}

/**
 * Whether an event the fallback's watch held (or delivers later on the same connection) comes
 * after the LIST snapshot, so must be applied on top of it; one at or before the LIST's
 * resourceVersion is already in the snapshot.
 *
 * resourceVersions are opaque to clients in general, but every API server backed by etcd serves
 * etcd's revision, a decimal integer, so two of those compare as integers (of any length). One
 * that is not an integer cannot be ordered, so the event applies: the watch opened before the
 * LIST and, started without a resourceVersion, replays current state and then every change, so
 * applying all of it in order ends at the cluster's state, and no-op suppression drops what the
 * snapshot already holds. Dropping it could lose a change; applying it can only repeat one.
 */
export function newerThanSnapshot(
  eventResourceVersion: string | undefined,
  snapshotResourceVersion: string | undefined,
): boolean {
  if (!orderable(eventResourceVersion, snapshotResourceVersion)) return true;
  return laterRevision(eventResourceVersion, snapshotResourceVersion);
}
