// A collection: one watch's slice of a source, (group, resource, namespace, selector) at one
// served version. The watch plane plans and watches them; every stream item names its own, so
// the write side keeps a snapshot's mark-and-sweep within it.
import type { LabelSelector } from "../../generated/v1alpha3/index.ts";
import { collectionPath } from "../kube/sources.ts";

export interface Collection {
  /** group/resource@namespace?selector: the collection's identity across plan passes. */
  key: string;
  group: string;
  version: string;
  resource: string;
  kind: string;
  namespaced: boolean;
  /** "" is every namespace (or a cluster-scoped type). */
  namespace: string;
  labelSelector: string;
  /** The objectSelector labelSelector was written from, to evaluate on labels; absent selects everything. */
  selector?: LabelSelector;
}

/** A collection's type as group/resource ("/configmaps" for the core group), whatever its slice. */
export function groupResourceOf(c: Pick<Collection, "group" | "resource">): string {
  return `${c.group}/${c.resource}`;
}

/**
 * The API path of a collection's objects; in `namespace` when given, as a cluster-wide
 * collection of a namespaced type reads one object in its own namespace.
 */
export function pathOf(c: Collection, namespace = c.namespace): string {
  return collectionPath({ group: c.group, version: c.version, plural: c.resource }, namespace);
}
