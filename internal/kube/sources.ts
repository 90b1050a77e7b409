import type { KubeConfig, KubernetesListObject, KubernetesObject } from "@kubernetes/client-node";
import { getJson } from "./rawget.ts";
import type { ResourceType } from "./resourceclient.ts";

/** What an informer lists and watches: an API path, and how to list it. */
export interface InformerSource<T extends KubernetesObject> {
  /** Such as /apis/configbutler.ai/v1alpha3/gittargets or /api/v1/namespaces. */
  path: string;
  list: () => Promise<KubernetesListObject<T>>;
}

/**
 * The API path of a type's objects: those of one namespace, or of every namespace (and a
 * cluster-scoped type's) when `namespace` is empty or absent. The one place it is spelled.
 */
export function collectionPath(
  type: Pick<ResourceType, "group" | "version" | "plural">,
  namespace?: string,
): string {
  const prefix = type.group === "" ? `/api/${type.version}` : `/apis/${type.group}/${type.version}`;
  return namespace ? `${prefix}/namespaces/${namespace}/${type.plural}` : `${prefix}/${type.plural}`;
}

/**
 * What a shared informer lists and watches for a type, read as raw JSON so objects arrive
 * exactly as served, built-in kinds included.
 */
export function informerSource<T extends KubernetesObject>(
  kubeConfig: KubeConfig,
  type: Pick<ResourceType, "group" | "version" | "plural">,
): InformerSource<T> {
  const path = collectionPath(type);
  return { path, list: () => getJson<KubernetesListObject<T>>(kubeConfig, path) };
}

export const namespaceType = { group: "", version: "v1", plural: "namespaces" };
export const secretType = { group: "", version: "v1", plural: "secrets" };
