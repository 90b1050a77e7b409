// What the writer's tests share: identities, decided writes, and a materialize with defaults.
import {
  materialize,
  type AppliedChange,
  type MaterializeOptions,
} from "../../../internal/git/folder/materialize.ts";
import type { DecidedWrite, PruneMode } from "../../../internal/git/folder/writes.ts";
import { FolderInventory } from "../../../internal/manifest/inventory/inventory.ts";
import type { ResourceIdentity } from "../../../internal/types/identity.ts";
import type { MemoryTree } from "./memorytree.ts";

export const committer = { name: "GitOps Reverser", email: "noreply@configbutler.ai" };

export const id = (
  name: string,
  namespace = "apps",
  resource = "configmaps",
  kind = "ConfigMap",
): ResourceIdentity => ({
  group: "",
  version: "v1",
  resource,
  kind,
  namespace,
  name,
  uid: name,
});

export function write(
  changes: DecidedWrite["changes"],
  extra: Partial<DecidedWrite> = {},
  prune: PruneMode = "OnEvent",
): DecidedWrite {
  return {
    target: { key: "apps/t", path: "clusters/dev", timers: { idleTimeoutMs: 0, maxDurationMs: 0 }, prune },
    reason: "live",
    changes,
    ...extra,
  };
}

export async function apply(
  tree: MemoryTree,
  w: DecidedWrite,
  refused: string[] = [],
  inventory = new FolderInventory("clusters/dev"),
  options: Partial<MaterializeOptions> = {},
) {
  const result = await materialize(tree, inventory, w, {
    committer,
    additionalSensitive: [],
    ...options,
    message: (_w: DecidedWrite, applied: AppliedChange[]) =>
      applied.map((a) => `${a.operation} ${a.identity.name}`).join(", "),
    onRefused: (_w, identity) => refused.push(identity.name),
  });
  return result.commit;
}
