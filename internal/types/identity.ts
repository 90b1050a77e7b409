// Which object something is about, as the watch plane names it and the write path files it, and
// the keys it is filed under.

/** Which object an item is about. The uid tells a recreated object from the one before it. */
export interface ResourceIdentity {
  group: string;
  version: string;
  resource: string;
  kind: string;
  namespace: string;
  name: string;
  uid: string;
}

/** An object's identity in Git: API group, kind, namespace and name; never the version. */
export function identityKey(group: string, kind: string, namespace: string, name: string): string {
  return `${group}/${kind}/${namespace}/${name}`;
}

export const identityKeyOf = (identity: ResourceIdentity) =>
  identityKey(identity.group, identity.kind, identity.namespace, identity.name);

/** An object within one watched collection (a collection's path, as internal/kube/sources.ts builds it). */
export const memberKey = (collection: string, identity: { namespace: string; name: string }) =>
  `${collection}|${identity.namespace}/${identity.name}`;
