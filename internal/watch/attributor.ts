// The watch plane's seam to attribution: with it on, each live change of a collection asks
// who made it, and the item waits for the answer in its watch's order.
import type { KubernetesObject } from "@kubernetes/client-node";
import type { StreamItem } from "../stream/stream.ts";
import type { Author } from "../types/signature.ts";

/** What a live change's watch event knows of its object, which is all attribution may join on. */
export interface LiveChange {
  namespace: string;
  name: string;
  uid: string;
  resourceVersion: string;
  /** A delete, or an object that is terminating: only a fact about its removal may answer. */
  removal: boolean;
  /** The object's labels, which a collection request's selector is evaluated on. */
  labels: Record<string, string>;
}

/** Who made a live change to an object of the collection: attribution's answer, or the sentinel. */
export type Attribute = (change: LiveChange) => Promise<Author>;

/** Attribution's side of one collection: its author lookup, and the end of its fact stream follow. */
export interface Attributor {
  author: Attribute;
  release(): void;
}

/**
 * The item with its author, once attribution resolved it: a promise the ordered push holds
 * every later item of the watch behind, so the wait never reorders the watch.
 */
export function withAuthor(
  attributor: Attributor | undefined,
  item: StreamItem | Promise<StreamItem>,
  object: KubernetesObject,
  removal: boolean,
): StreamItem | Promise<StreamItem> {
  if (!attributor) return item;
  const { namespace = "", name = "", uid = "", resourceVersion = "", labels = {} } = object.metadata ?? {};
  const author = attributor.author({ namespace, name, uid, resourceVersion, removal, labels });
  return Promise.all([item, author]).then(([resolved, who]) =>
    resolved.type === "upsert" || resolved.type === "delete" ? { ...resolved, author: who } : resolved,
  );
}
