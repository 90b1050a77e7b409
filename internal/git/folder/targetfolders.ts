// What a branch worker keeps per GitTarget folder besides its writes: the folder's inventory,
// the acceptance gate's last verdict, the render-vs-live gate that holds, releases or drops live
// events, and where new documents were last placed. The worker asks it what to do with each
// live item and tells it what each write found; it reports every change to the target's status.
import { type Refusal, FolderInventory, acceptFollowed, type PlacementSource } from "../../manifest/index.ts";
import type { InventoryStore } from "./inventorystore.ts";
import type { StreamItem } from "../../stream/stream.ts";
import { TargetCollections } from "./collections.ts";
import { followedObjects } from "./followed.ts";
import type { FolderState, MaterializeResult } from "./materialize.ts";
import { deleteReaches } from "./prune.ts";
import { RefusedWrites, type RefusedWrite } from "./refusedwrites.ts";
import { RenderGate, type GateReport } from "./rendergate.ts";
import type { DecidedWrite, PruneMode, Replayed, TargetSettings } from "./writes.ts";

/** A live item the worker took from a stream, with the target it came for. */
export interface Intake {
  target: TargetSettings;
  item: StreamItem;
  /** The render gate already let it through: it is not judged again. */
  admitted?: boolean;
  /** Its serialized size, measured once when it was taken. */
  bytes?: number;
  /** Its entry in the branch's durable write queue, when it has one: the queue is trimmed no further while it is held. */
  entry?: string;
  /** Replayed from the durable queue: its object's replayed values, and which one it is. */
  replayed?: Replayed;
}

/** What the write side reports of one folder, for the GitTarget's status. */
export interface FolderReport {
  /** The acceptance gate refused the folder; undefined once it is accepted. */
  refusal?: Refusal;
  /** Each change that had nowhere to land, and why, while it stays unwritten. */
  refusedWrites: RefusedWrite[];
  renderGate: GateReport;
  /** How many SOPS documents the folder holds. */
  encryptedDocuments: number;
  placement?: {
    source: PlacementSource;
    kustomizeRoot?: string;
    documents: number;
    commit?: string;
    observedAt?: Date;
  };
}

/** Why a write or a live event was dropped, as git_writes_dropped_total's reason. */
export type DropReason = "render_fidelity_pending" | "render_fidelity_diverged" | "unsupported_content";

export interface TargetFolderCallbacks {
  /** `byWrite`: made by a write, which a push follows; otherwise by a read of the folder. */
  onReport(targetKey: string, report: FolderReport, byWrite: boolean): void;
  onDropped(targetKey: string, reason: DropReason, count: number): void;
  onPlaced(
    targetKey: string,
    identity: { group: string; version: string; resource: string },
    source: PlacementSource,
  ): void;
  /** A fresh snapshot is needed of these collections (all of the target's when undefined). */
  onResyncRequested(targetKey: string, collections: string[] | undefined): void;
}

interface TargetFolder {
  target: TargetSettings;
  inventory: FolderInventory;
  gate: RenderGate<Intake>;
  collections: TargetCollections;
  /** The prune mode the target's latest item came with: what a write removes by when it is made. */
  prune: PruneMode;
  refusal?: Refusal;
  refusedWrites: RefusedWrites;
  placedBy?: PlacementSource;
}

export class TargetFolders {
  private readonly folders = new Map<string, TargetFolder>();

  constructor(
    private readonly limits: { holdMs: number; budgetBytes: number },
    private readonly callbacks: TargetFolderCallbacks,
    /** Where each folder's inventory is kept across a restart, and started from. */
    private readonly store?: InventoryStore,
  ) {}

  /** Keeps every folder's inventory, so a restart reads only what changed since. */
  async saveInventories(): Promise<void> {
    for (const folder of this.folders.values()) {
      const saved = folder.inventory.save();
      if (saved) await this.store?.save(saved);
    }
  }

  /** The durable queue entries of the live items the folders' render gates hold. */
  *heldEntries(): Generator<string | undefined> {
    for (const folder of this.folders.values())
      for (const intake of folder.gate.holding()) yield intake.entry;
  }

  /** The inventory of a target's folder, kept across commits. */
  inventory(target: TargetSettings): FolderInventory {
    return this.folder(target).inventory;
  }

  /** What a write to the target's folder is made by now: its prune mode and its collections. */
  state(target: TargetSettings): FolderState {
    const folder = this.folder(target);
    return { prune: folder.prune, collections: folder.collections.views() };
  }

  /**
   * Judges a live item: true when it goes on to the commit window. Markers of a replay move the
   * gate; a held item comes back later from `released`. A selector exit that another collection
   * still holds is no change at all.
   */
  admit(intake: Intake, bytes: number, now: number): { pass: boolean; released: Intake[] } {
    const { target, item } = intake;
    const folder = this.folder(target);
    if (!intake.admitted) {
      folder.collections.observe(item);
      folder.prune = target.prune;
    }
    if (item.type === "replaying") {
      folder.gate.replayStarted(item.collection.key);
      this.report(target);
      return { pass: false, released: [] };
    }
    if (item.type === "removed") {
      const released = folder.gate.collectionRemoved(item.collection.key);
      this.report(target);
      return { pass: false, released: released.map((i) => ({ ...i, admitted: true })) };
    }
    if (item.type === "snapshot") {
      folder.gate.snapshotArrived(item.collection.key);
      return { pass: true, released: [] };
    }
    if (item.type === "delete" && !deleteReaches(item, folder.collections.views()))
      return { pass: false, released: [] };
    if (intake.admitted) return { pass: true, released: [] };
    const admission = folder.gate.admit(item.collection.key, intake, bytes, now);
    if (admission === "pass") return { pass: true, released: [] };
    if (admission !== "held") this.callbacks.onDropped(target.key, admission, 1);
    return { pass: false, released: [] };
  }

  /**
   * Takes what a write found: a refusal of the folder, a snapshot's measurement, the rungs that
   * placed new documents. Returns the held items the gate released, to be written before anything
   * later.
   */
  written(write: DecidedWrite, result: MaterializeResult): Intake[] {
    const { target } = write;
    const folder = this.folder(target);
    const wasRefused = folder.refusal !== undefined;
    folder.refusal = result.refusal;
    if (result.refusal) this.callbacks.onDropped(target.key, "unsupported_content", 1);
    // The writes dropped while the folder was refused come back as a fresh snapshot.
    if (wasRefused && !result.refusal) this.callbacks.onResyncRequested(target.key, undefined);
    if (result.refusedWrites) folder.refusedWrites.took(write.changes, result.refusedWrites);
    for (const { identity, source } of result.placements) {
      folder.placedBy = source;
      this.callbacks.onPlaced(target.key, identity, source);
    }
    let released: Intake[] = [];
    if (write.sweep && result.divergences) {
      const change = folder.gate.replayMeasured(write.sweep.collection.key, result.divergences);
      if (change.dropped.length > 0)
        this.callbacks.onDropped(target.key, "render_fidelity_diverged", change.dropped.length);
      released = change.released.map((i) => ({ ...i, admitted: true }));
    }
    this.report(target, true);
    return released;
  }

  /** The commits were written again (signed) with the same trees: a folder read at `from` is at `to`. */
  rewritten(from: string, to: string): void {
    for (const folder of this.folders.values())
      if (folder.inventory.readAt === from) folder.inventory.committed(to);
  }

  /**
   * A push landed the target's writes: its report takes the commit the folder is at now, which
   * the writes' own reports could not name while their commits were still being answered. The
   * push's wake-up publishes it.
   */
  published(target: TargetSettings): void {
    this.report(target, true);
  }

  /** The acceptance gate's verdict on the folder as last read, with what the target follows now. */
  verdict(target: TargetSettings): Refusal | undefined {
    const folder = this.folder(target);
    return acceptFollowed(folder.inventory, followedObjects(folder.collections.views()));
  }

  /** Re-reads a folder's verdict without writing: a refused folder learns it was fixed. */
  checked(target: TargetSettings, refusal: Refusal | undefined): void {
    const folder = this.folder(target);
    const wasRefused = folder.refusal !== undefined;
    folder.refusal = refusal;
    if (wasRefused && !refusal) this.callbacks.onResyncRequested(target.key, undefined);
    this.report(target);
  }

  /** Every target whose folder this worker has seen. */
  targets(): TargetSettings[] {
    return [...this.folders.values()].map((f) => f.target);
  }

  /**
   * Why the folder may not be written now, for a CommitRequest: its acceptance gate refused it,
   * or its render-vs-live gate has not passed.
   */
  writeGate(target: TargetSettings): string | undefined {
    const folder = this.folder(target);
    if (folder.refusal) return `the folder is refused: ${folder.refusal.message}`;
    const gate = folder.gate.report();
    if (gate.status !== "True") return `render fidelity is not established: ${gate.message}`;
    return undefined;
  }

  isRefused(target: TargetSettings): boolean {
    return this.folders.get(target.key)?.refusal !== undefined;
  }

  /** Gives up holds past their deadline or budget, and asks for the snapshots that restore them. */
  expire(now: number): void {
    for (const [key, folder] of this.folders) {
      const { dropped, resync } = folder.gate.expire(now);
      if (dropped.length > 0) this.callbacks.onDropped(key, "render_fidelity_pending", dropped.length);
      if (resync.length > 0) this.callbacks.onResyncRequested(key, resync);
    }
  }

  /** The earliest moment a hold gives up. */
  dueAt(): number | undefined {
    const due = [...this.folders.values()]
      .map((f) => f.gate.dueAt())
      .filter((d): d is number => d !== undefined);
    return due.length > 0 ? Math.min(...due) : undefined;
  }

  private folder(target: TargetSettings): TargetFolder {
    let folder = this.folders.get(target.key);
    if (!folder) {
      const inventory = new FolderInventory(target.path);
      const saved = this.store?.load(target.path);
      if (saved) inventory.restore(saved);
      folder = {
        target,
        inventory,
        gate: new RenderGate(this.limits),
        collections: new TargetCollections(),
        refusedWrites: new RefusedWrites(),
        prune: target.prune,
      };
      this.folders.set(target.key, folder);
    }
    // The latest settings: a target's spec may have changed its prune mode or placement.
    folder.target = target;
    return folder;
  }

  private report(target: TargetSettings, byWrite = false): void {
    const folder = this.folder(target);
    const { inventory } = folder;
    const kustomizations = inventory.kustomizations();
    const source: PlacementSource =
      folder.placedBy ??
      (target.placement?.default !== undefined
        ? "Declared"
        : kustomizations.length === 1
          ? "KustomizeRoot"
          : "BuiltIn");
    this.callbacks.onReport(
      target.key,
      {
        refusal: folder.refusal,
        refusedWrites: folder.refusedWrites.list(),
        renderGate: folder.gate.report(),
        encryptedDocuments: inventory.sealedCount,
        placement: {
          source,
          kustomizeRoot: source === "KustomizeRoot" ? kustomizations[0] : undefined,
          documents: inventory.documentCount,
          commit: inventory.readAt,
          observedAt: inventory.observedAt,
        },
      },
      byWrite,
    );
  }
}
