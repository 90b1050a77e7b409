// One vocabulary for the identity of a namespaced object: its NamespacedName, and the key it is
// known by in maps, queues, metrics and logs, "namespace/name". Built and read here only, so a
// key is never spelled by hand. (An object in Git is keyed by identity.ts.)

export interface NamespacedName {
  namespace: string;
  name: string;
}

/** "namespace/name": the key of a namespaced object, or of a reference to one. */
export function keyOf(ref: { namespace?: string | undefined; name?: string | undefined }): string {
  return `${ref.namespace ?? ""}/${ref.name ?? ""}`;
}

/** The NamespacedName a key names; the inverse of keyOf. */
export function parseKey(key: string): NamespacedName {
  const slash = key.indexOf("/");
  return slash === -1
    ? { namespace: "", name: key }
    : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** The key of an object, from its metadata. */
export const objectKeyOf = (object: { metadata?: { namespace?: string; name?: string } }): string =>
  keyOf(object.metadata ?? {});

/** A reference's namespace, or `own`, the namespace of the object that holds the reference. */
export const refOf = (ref: { name: string; namespace?: string }, own: string): NamespacedName => ({
  namespace: ref.namespace ?? own,
  name: ref.name,
});

/**
 * The key an informer's store and a controller's queue file an object under: "namespace/name",
 * or the name alone for a cluster-scoped object.
 */
export function storeKey(ref: { namespace?: string | undefined; name?: string | undefined }): string {
  return ref.namespace ? `${ref.namespace}/${ref.name}` : (ref.name ?? "");
}

/** The reference a store key names; the inverse of storeKey. */
export function parseStoreKey(key: string): { namespace?: string; name: string } {
  const slash = key.indexOf("/");
  return slash < 0 ? { name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** The store key of an object, from its metadata. */
export const storeKeyOf = (object: { metadata?: { namespace?: string; name?: string } }): string =>
  storeKey(object.metadata ?? {});
