// What may remove a document from a GitTarget's folder. The prune mode decides which kind of
// removal deletes anything at all; the target's collections decide which documents a removal
// reaches: a snapshot establishes absence only inside what was observed, and an object that
// left one collection by its labels may be held by another. Pure: the worker's folders pass in
// what they know of the target's collections.
import { type DocumentFacts, groupOf } from "../../manifest/index.ts";
import { selects } from "../../kube/labels.ts";
import type { StreamItem } from "../../stream/stream.ts";
import type { Collection } from "../../stream/collection.ts";
import type { PruneMode } from "./writes.ts";
import { keyOf } from "../../types/names.ts";

/** An observed removal is a delete (or a selector exit) the watch saw; an inferred one is a sweep's. */
export type Removal = "observed" | "inferred";

/** Never keeps every document; OnEvent removes on an observed delete; Always also sweeps on snapshots. */
export function pruneRemoves(mode: PruneMode, removal: Removal): boolean {
  if (mode === "Never") return false;
  return removal === "observed" || mode === "Always";
}

/** What the write side knows of one of a target's active collections, from its stream. */
export interface CollectionView {
  collection: Collection;
  /** Its snapshot arrived since it last began replaying: until then it could hold anything it covers. */
  complete: boolean;
  /** namespace/name of the objects it holds: its snapshot's, and its live items' since. */
  members: ReadonlySet<string>;
}

/** Whether a collection watches objects of this type in this namespace, whatever their labels. */
function covers(c: Collection, group: string, kind: string, namespace: string): boolean {
  return c.group === group && c.kind === kind && (c.namespace === "" || c.namespace === namespace);
}

/**
 * Whether a snapshot's sweep reaches a document of the folder. Only a document the target
 * observes can be found absent: one some collection's selector matches by its labels as written.
 * And only when every collection that covers it has established its absence: the snapshot by
 * not holding it, every other collection by a completed snapshot and live items that do not
 * hold it either. A peer still replaying could hold it; the last snapshot to complete sweeps it.
 */
export function sweepReaches(
  doc: DocumentFacts,
  snapshot: { collection: Collection; present: ReadonlySet<string> },
  collections: readonly CollectionView[],
): boolean {
  const { collection, present } = snapshot;
  const group = groupOf(doc.apiVersion);
  const key = keyOf(doc);
  if (!covers(collection, group, doc.kind, doc.namespace) || present.has(key)) return false;
  const peers = collections.filter(
    (v) => v.collection.key !== collection.key && covers(v.collection, group, doc.kind, doc.namespace),
  );
  const observed = [collection, ...peers.map((p) => p.collection)].some((c) => selects(c, doc.labels));
  return observed && peers.every((p) => p.complete && !p.members.has(key));
}

/**
 * Whether a live delete removes its object's document. A deletion does. An object that left its
 * collection by its labels does only when no collection of the target could still hold it: none
 * selects its labels now, and no other one holds it already.
 */
export function deleteReaches(
  item: Extract<StreamItem, { type: "delete" }>,
  collections: readonly CollectionView[],
): boolean {
  if (!item.exited) return true;
  const { group, kind, namespace, name } = item.identity;
  const { labels } = item.exited;
  const key = keyOf({ namespace, name });
  if (selects(item.collection, labels)) return false;
  return !collections.some(
    (v) =>
      covers(v.collection, group, kind, namespace) &&
      (selects(v.collection, labels) || (v.collection.key !== item.collection.key && v.members.has(key))),
  );
}
