// A folder a claim applies belongs to that claim's applier. An object another applier applies
// (another Kustomization, another Application), mirrored into it, would be applied by this
// applier too, and two appliers applying one object fight each other. So in a coordinated
// folder such an object is excluded: a live event is not mirrored, and a snapshot entry is
// neither upserted nor treated as missing, so the sweep leaves its document alone, under
// prune.mode: Always too. An object owned by nobody, or by the folder's own applier, is
// mirrored as before, and a folder with no claim excludes nothing.
import { isApplier } from "../../applier/decide/index.ts";
import { identityKeyOf, type ResourceIdentity } from "../../types/identity.ts";
import { keyOf } from "../../types/names.ts";
import type { StreamItem } from "../../stream/stream.ts";
import type { TargetSettings } from "./writes.ts";

export interface Coordinated {
  /** The item to mirror, or undefined when all of it is another applier's. */
  item?: StreamItem;
  /** What was kept out. */
  excluded: ResourceIdentity[];
}

export function coordinated(settings: Pick<TargetSettings, "applier">, item: StreamItem): Coordinated {
  const applier = settings.applier;
  if (!applier) return { item, excluded: [] };
  const foreign = (owner: { appliedBy?: Parameters<typeof isApplier>[0] }) =>
    owner.appliedBy !== undefined && !isApplier(owner.appliedBy, applier);
  if (item.type === "upsert" || item.type === "delete") {
    return foreign(item) ? { excluded: [item.identity] } : { item, excluded: [] };
  }
  if (item.type !== "snapshot") return { item, excluded: [] };
  const excluded = item.objects.filter(foreign).map((o) => o.identity);
  if (excluded.length === 0) return { item, excluded };
  return {
    item: {
      ...item,
      objects: item.objects.filter((o) => !foreign(o)),
      kept: [...(item.kept ?? []), ...excluded.map(keyOf)],
    },
    excluded,
  };
}

/** Remembers which excluded objects were reported, so each is logged and counted once. */
export class Exclusions {
  private readonly seen = new Set<string>();

  /** The identities among `excluded` not reported before for `targetKey`. */
  firstSeen(targetKey: string, excluded: readonly ResourceIdentity[]): ResourceIdentity[] {
    return excluded.filter((identity) => {
      const key = `${targetKey}|${identityKeyOf(identity)}|${identity.uid}`;
      if (this.seen.has(key)) return false;
      this.seen.add(key);
      return true;
    });
  }
}
