// What a closed window or a snapshot decides: the changes one commit makes to one GitTarget's
// folder. A decided write is kept until a push lands, so nothing accepted is lost.
import type { Collection } from "../watch/watchedtypes.ts";
import type { Author, DesiredObject, ResourceIdentity, StreamItem } from "../watch/stream.ts";
import type { MessageTemplates } from "../commitmessage/messages.ts";
import type { PlacementPolicy } from "../manifest/ladder.ts";
import type { WindowTimers } from "./window.ts";
import { keyOf } from "../types/names.ts";

export type PruneMode = "OnEvent" | "Always" | "Never";

/** What the worker needs of a GitTarget. */
export interface TargetSettings {
  /** namespace/name */
  key: string;
  path: string;
  timers: WindowTimers;
  prune: PruneMode;
  /** spec.commit.message; the defaults where omitted. */
  templates?: MessageTemplates;
  /** spec.placement: where new documents go before the kustomize root and the built-in path. */
  placement?: PlacementPolicy;
  /** spec.suspend: the worker takes the target's items and writes none of them. */
  suspend?: boolean;
  /** spec.encryption: the age recipients sensitive documents are encrypted to. */
  encryption?: { recipients: readonly string[] };
}

export type Change =
  | ({ op: "upsert" } & DesiredObject)
  /** `inferred`: a snapshot's sweep decided it, so a replay applies it only while the prune mode sweeps. */
  | { op: "delete"; identity: ResourceIdentity; inferred?: true };

export interface DecidedWrite {
  target: TargetSettings;
  reason: "live" | "reconcile";
  /** The live changes' author, as attribution resolved it; the committer when absent. */
  author?: Author;
  changes: Change[];
  /**
   * For a snapshot: the collection it observed. Under prune Always it sweeps the documents
   * absent from it that no other collection of the target holds or could hold (prune.ts).
   */
  sweep?: { collection: Collection; present: Set<string> };
  /**
   * What the write's first commit decided: the upserts that changed the tree and the documents
   * it removed, its sweep's included. A replay onto a newer tip applies these and plans nothing
   * else, so it never sweeps again and never reverts what the newer tip changed.
   */
  decided?: Change[];
}

/** A snapshot's write: every object it observed, upserted, and a sweep of what it did not. */
export function resyncWrite(
  target: TargetSettings,
  item: Extract<StreamItem, { type: "snapshot" }>,
): DecidedWrite {
  return {
    target,
    reason: "reconcile",
    changes: item.objects.map((o) => ({ op: "upsert", ...o })),
    sweep: {
      collection: item.collection,
      present: new Set(item.objects.map((o) => keyOf(o.identity))),
    },
  };
}

/** The change a live upsert or delete makes. */
export function liveChange(item: Extract<StreamItem, { type: "upsert" | "delete" }>): Change {
  return item.type === "upsert"
    ? {
        op: "upsert",
        identity: item.identity,
        object: item.object,
        defaulted: item.defaulted,
        digest: item.digest,
      }
    : { op: "delete", identity: item.identity };
}
