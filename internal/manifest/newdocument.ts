// How a new object is written where a kustomization sets the namespace of what it builds. Such a
// folder's documents leave the namespace to the kustomization, and a new one follows them: it is
// written without metadata.namespace, so renaming the kustomization's namespace moves it along
// with the rest. An object of another namespace would render in the kustomization's, which is
// not where it lives: it is refused rather than written where the build would move it.
import type { KubernetesObject } from "@kubernetes/client-node";

export type NewDocument = { object: KubernetesObject } | { refused: string; reason: "namespace_overridden" };

/**
 * The document to write for a new object placed at `path`, given the `namespace:` the
 * kustomizations building it set (undefined when none does). Pure.
 */
export function newDocument(
  object: KubernetesObject,
  path: string,
  override: string | undefined,
): NewDocument {
  const namespace = object.metadata?.namespace ?? "";
  if (override === undefined || namespace === "") return { object };
  if (override !== namespace) {
    return {
      refused:
        `${object.kind} ${namespace}/${object.metadata?.name} would be placed at ${path}, which a kustomization ` +
        `builds with namespace: ${override}, so it would render in ${override}; give it a path outside that ` +
        "kustomization with spec.placement",
      reason: "namespace_overridden",
    };
  }
  const { namespace: _set, ...metadata } = object.metadata ?? {};
  return { object: { ...object, metadata } };
}
