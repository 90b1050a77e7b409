// The ConfigMap collection and identities the write-side unit tests share.
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
