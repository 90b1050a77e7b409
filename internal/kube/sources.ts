import type { KubeConfig, KubernetesListObject, KubernetesObject } from "@kubernetes/client-node";
import type { InformerSource } from "../operator/informer.ts";
import { getJson } from "./rawget.ts";
import type { ResourceType } from "./resourceclient.ts";

/** The API path of every object of a type, across namespaces. */
export function collectionPathOf(type: Pick<ResourceType, "group" | "version" | "plural">): string {
  return type.group === ""
    ? `/api/${type.version}/${type.plural}`
    : `/apis/${type.group}/${type.version}/${type.plural}`;
}

/**
 * What a shared informer lists and watches for a type, read as raw JSON so objects arrive
 * exactly as served, built-in kinds included.
 */
export function informerSource<T extends KubernetesObject>(
  kubeConfig: KubeConfig,
  type: Pick<ResourceType, "group" | "version" | "plural">,
): InformerSource<T> {
  const path = collectionPathOf(type);
  return { path, list: () => getJson<KubernetesListObject<T>>(kubeConfig, path) };
}

export const namespaceType = { group: "", version: "v1", plural: "namespaces" };
export const secretType = { group: "", version: "v1", plural: "secrets" };
