// What a closed window or a snapshot decides: the changes one commit makes to one GitTarget's
// folder. A decided write is kept until a push lands, so nothing accepted is lost.
import type { Collection } from "../../stream/collection.ts";
import type { DesiredObject, StreamItem } from "../../stream/stream.ts";
import type { ResourceIdentity } from "../../types/identity.ts";
import type { Author } from "../../types/signature.ts";
import type { MessageTemplates } from "../../commitmessage/messages.ts";
import type { PlacementPolicy } from "../../manifest/index.ts";
import { keyOf } from "../../types/names.ts";
import type { AppliedBy } from "../../types/applied.ts";
import type { ClaimKind } from "../../types/claims.ts";

export type PruneMode = "OnEvent" | "Always" | "Never";

/** When a GitTarget's commit windows close: idleTimeout of silence, or maxDuration after opening. */
export interface WindowTimers {
  idleTimeoutMs: number;
  maxDurationMs: number;
}

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
  /** The applier of the claim spec.applierClaimRef names: its folder takes no other applier's objects. */
  applier?: Required<AppliedBy>;
  /**
   * The claim that holds `applier`, with the target's uid (a target re-created under its name
   * inherits nothing due to the old one) and spec.onRefusal: what the worker asks applies for.
   */
  claim?: {
    kind: ClaimKind;
    namespace: string;
    name: string;
    targetUid: string;
    onRefusal?: string;
  };
}

/** How a replayed change names an object whose replayed write deletes it. */
export const absentDocument = "absent";

/**
 * A change replayed from the durable queue: the content digest (or absentDocument) of each of
 * its object's replayed writes, oldest first, shared by all of them, and which one it is.
 */
export interface Replayed {
  values: readonly string[];
  at: number;
}

export type Change = (
  | ({ op: "upsert" } & DesiredObject)
  /** `inferred`: a snapshot's sweep decided it, so a replay applies it only while the prune mode sweeps. */
  | { op: "delete"; identity: ResourceIdentity; inferred?: true }
) & {
  /**
   * Replayed from the durable queue. A document that already holds this write's value or a
   * later replayed one was pushed before the process that made them could trim its queue: the
   * change is skipped, so nothing is committed twice and an earlier value never over a later.
   */
  replayed?: Replayed;
};

/** The CommitRequest a write carries: its message, and what its materialization found. */
export interface SaveOnWrite {
  /** The CommitRequest's uid. */
  id: string;
  /** spec.message, verbatim; undefined: the liveTemplate writes the message. */
  message?: string;
  /** Nothing to commit records the message in an empty commit. */
  commitEmpty: boolean;
  /** Why the write could not be made, from its latest materialization: the request fails. */
  refused?: string;
  /** Its latest materialization committed nothing but the message (CommitEmpty). */
  empty?: boolean;
  /** The commit it made, as the remote holds it: set once the push that carried it landed. */
  commit?: string;
}

export interface DecidedWrite {
  target: TargetSettings;
  reason: "live" | "reconcile";
  /**
   * A closed window a CommitRequest was attached to (or, with CommitEmpty, the empty commit of
   * one no window reached): its message, and a replay that keeps every object it captured, so
   * the push decides the request's outcome.
   */
  save?: SaveOnWrite;
  /** The live changes' author, as attribution resolved it; the committer when absent. */
  author?: Author;
  changes: Change[];
  /** The oldest durable queue entry among its changes: the queue is trimmed no further until it lands. */
  entry?: string;
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
  /**
   * A GitTarget's first snapshot with an applier: the commit the applier last applied, against
   * which what was pushed since is told apart from what was edited live (threeway.ts).
   */
  threeWay?: { base: string };
}

/** A snapshot's write: every object it observed, upserted, and a sweep of what it did not. */
export function resyncWrite(
  target: TargetSettings,
  item: Extract<StreamItem, { type: "snapshot" }>,
  threeWay?: { base: string },
): DecidedWrite {
  return {
    target,
    reason: "reconcile",
    ...(threeWay ? { threeWay } : {}),
    changes: item.objects.map((o) => ({ op: "upsert", ...o })),
    sweep: {
      collection: item.collection,
      present: new Set([...item.objects.map((o) => keyOf(o.identity)), ...(item.kept ?? [])]),
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

/** The decided writes a branch keeps until a push lands them, oldest first, each with its weight. */
export class RetainedWrites {
  private readonly kept: { write: DecidedWrite; bytes: number }[] = [];

  get length(): number {
    return this.kept.length;
  }

  /** What they weigh against the branch budget. */
  get bytes(): number {
    return this.kept.reduce((sum, k) => sum + k.bytes, 0);
  }

  writes(): DecidedWrite[] {
    return this.kept.map((k) => k.write);
  }

  /** Keeps a write: its bytes, and a charge per change, so many small ones count too. */
  add(write: DecidedWrite, bytes: number, chargeBytes: number): void {
    this.kept.push({ write, bytes: bytes + chargeBytes * Math.max(1, write.changes.length) });
  }

  /** Lets the first `count` go: a push landed them. */
  published(count: number): void {
    this.kept.splice(0, count);
  }
}
