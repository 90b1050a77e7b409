// The ConfigMap collection and identities the write-side unit tests, and the benchmark, share.
import type { ResourceIdentity } from "../../../internal/types/identity.ts";
import type { Collection } from "../../../internal/stream/collection.ts";

export const configMaps: Collection = {
  key: "/configmaps@apps",
  group: "",
  version: "v1",
  resource: "configmaps",
  kind: "ConfigMap",
  namespaced: true,
  namespace: "apps",
  labelSelector: "",
};

export const configMapIdentity = (name: string, namespace = "apps"): ResourceIdentity => ({
  group: "",
  version: "v1",
  resource: "configmaps",
  kind: "ConfigMap",
  namespace,
  name,
  uid: name,
});
