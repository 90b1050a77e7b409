// Which object something is about, as the watch plane names it and the write path files it.

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
