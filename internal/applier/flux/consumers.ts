// The source's other consumers: Kustomizations that read the same GitRepository and that no
// claim holds. Each applies a new artifact the moment it arrives, so a claim lists them in
// status.source.otherConsumers. Information only: one GitRepository for apps and infra is a
// normal setup, so it never affects Ready.
import { keyOf, type NamespacedName } from "../../types/names.ts";
import type { Kustomization } from "./view.ts";

export interface Consumer {
  kind: string;
  namespace: string;
  name: string;
}

/**
 * The Kustomizations among `all` whose sourceRef is `source`, other than `held` and those
 * `heldByClaims` names (keys of Kustomizations some claim holds), sorted.
 */
export function otherConsumers(
  all: readonly Kustomization[],
  source: NamespacedName,
  held: NamespacedName,
  heldByClaims: ReadonlySet<string>,
): Consumer[] {
  return all
    .filter((k) => {
      const namespace = k.metadata?.namespace ?? "";
      const ref = k.spec?.sourceRef;
      const key = keyOf({ namespace, name: k.metadata?.name });
      return (
        ref?.kind === "GitRepository" &&
        (ref.namespace ?? namespace) === source.namespace &&
        ref.name === source.name &&
        key !== keyOf(held) &&
        !heldByClaims.has(key)
      );
    })
    .map((k) => ({
      kind: "Kustomization",
      namespace: k.metadata?.namespace ?? "",
      name: k.metadata?.name ?? "",
    }))
    .sort((a, b) => keyOf(a).localeCompare(keyOf(b)));
}
