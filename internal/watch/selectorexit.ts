// Whether a DELETED from a watch with a label selector is the object's deletion or its exit
// from the selector. The API server sends both alike: the last state that matched, at the
// event's resourceVersion. So the object is read again. Still there under the same uid, it only
// left the collection, and its labels now decide whether another collection of the target holds
// it; gone, or recreated under a new uid, it was deleted.
import type { KubeConfig } from "@kubernetes/client-node";
import { ApiStatusError, getJson } from "../kube/rawget.ts";
import type { Logger } from "../telemetry/logger.ts";
import type { SelectorExit, StreamItem } from "../stream/stream.ts";
import type { ResourceIdentity } from "../types/identity.ts";
import { pathOf, type Collection } from "../stream/collection.ts";
import { keyOf } from "../types/names.ts";
import { errorText } from "../telemetry/errortext.ts";

// A cluster-wide collection of a namespaced type reads each object in its own namespace.
const objectPath = (c: Collection, identity: ResourceIdentity) =>
  `${pathOf(c, identity.namespace)}/${identity.name}`;

/** The object's exit from the collection, or undefined when it was deleted. Never rejects. */
export async function selectorExitOf(
  kubeConfig: KubeConfig,
  collection: Collection,
  identity: ResourceIdentity,
  logger: Logger,
): Promise<SelectorExit | undefined> {
  try {
    const now = await getJson<{ metadata?: { uid?: string; labels?: Record<string, string> } }>(
      kubeConfig,
      objectPath(collection, identity),
    );
    if (now.metadata?.uid !== identity.uid) return undefined;
    return { labels: now.metadata.labels ?? {} };
  } catch (err) {
    if (err instanceof ApiStatusError && err.code === 404) return undefined;
    // Unread, it is taken for the deletion the event announces, as it was before exits were told apart.
    logger.warn("could not tell a selector exit from a deletion; taking it as a deletion", {
      collection: collection.key,
      object: keyOf(identity),
      error: errorText(err),
    });
    return undefined;
  }
}

/**
 * The delete item of a DELETED event: at once for a collection without a selector, where every
 * DELETED is a deletion; once the object is read again otherwise.
 */
export function deleteItemOf(
  kubeConfig: KubeConfig,
  collection: Collection,
  identity: ResourceIdentity,
  logger: Logger,
): StreamItem | Promise<StreamItem> {
  const item = { type: "delete" as const, collection, identity };
  if (!collection.labelSelector) return item;
  return selectorExitOf(kubeConfig, collection, identity, logger).then((exited) =>
    exited ? { ...item, exited } : item,
  );
}
