import type { KubernetesObject } from "@kubernetes/client-node";
import type { ResourceClient } from "../kube/resourceclient.ts";

export function hasFinalizer(object: KubernetesObject, finalizer: string): boolean {
  return object.metadata?.finalizers?.includes(finalizer) ?? false;
}

/**
 * JSON patches that add or remove one finalizer, each guarded by a test of what it read, so a
 * concurrent change by another controller makes the patch fail rather than be overwritten.
 */
export function addFinalizerPatch(object: KubernetesObject, finalizer: string): object[] {
  const current = object.metadata?.finalizers;
  if (!current) {
    return [
      { op: "test", path: "/metadata/resourceVersion", value: object.metadata?.resourceVersion },
      { op: "add", path: "/metadata/finalizers", value: [finalizer] },
    ];
  }
  return [
    { op: "test", path: "/metadata/finalizers", value: current },
    { op: "add", path: "/metadata/finalizers/-", value: finalizer },
  ];
}

export function removeFinalizerPatch(object: KubernetesObject, finalizer: string): object[] {
  const index = object.metadata?.finalizers?.indexOf(finalizer) ?? -1;
  if (index < 0) return [];
  return [
    { op: "test", path: `/metadata/finalizers/${index}`, value: finalizer },
    { op: "remove", path: `/metadata/finalizers/${index}` },
  ];
}

/** Adds the finalizer unless the object has it; returns the object as stored. */
export async function ensureFinalizer<T extends KubernetesObject>(
  client: ResourceClient<T>,
  object: T,
  finalizer: string,
): Promise<T> {
  if (hasFinalizer(object, finalizer)) return object;
  return client.jsonPatch(object, addFinalizerPatch(object, finalizer));
}

/** Removes the finalizer if the object has it. */
export async function removeFinalizer<T extends KubernetesObject>(
  client: ResourceClient<T>,
  object: T,
  finalizer: string,
): Promise<void> {
  const patch = removeFinalizerPatch(object, finalizer);
  if (patch.length > 0) await client.jsonPatch(object, patch);
}
