// Makes one decided write in the clone and commits it. The folder's inventory is brought to the
// worktree's commit first, and the acceptance gate runs on it before anything is planned: a
// folder the operator cannot manage safely is refused whole, and nothing is written. A snapshot
// also measures the folder's ${...} tokens against live, for the render-vs-live gate, and under
// prune Always sweeps what it observed absent. Every removal asks the prune mode the target has
// now, a replay's included (prune.ts).
import { bootstrapFiles } from "../manifest/bootstrap.ts";
import type { Refusal } from "../manifest/acceptance.ts";
import type { FileTree } from "../manifest/folder.ts";
import type { FolderInventory, VersionedTree } from "../manifest/inventory.ts";
import type { PlacementSource } from "../manifest/ladder.ts";
import { formatPath } from "../manifest/rendermeasure.ts";
import { FolderWriter, identityKeyOf } from "../manifest/writer.ts";
import type { ResourceIdentity } from "../watch/stream.ts";
import type { Clone, Signature } from "./clone.ts";
import { pruneRemoves, sweepReaches, type CollectionView } from "./prune.ts";
import type { MeasuredDivergence } from "./rendergate.ts";
import type { Change, DecidedWrite, PruneMode } from "./writes.ts";

export interface MaterializeOptions {
  committer: Signature;
  /** resource.group names treated as sensitive besides core Secrets. */
  additionalSensitive: readonly string[];
  /** The commit message, from the write and what it changed. */
  message: (write: DecidedWrite, applied: AppliedChange[]) => string;
  /** Called for each object refused fail-safe, so it can be logged, counted and reported. */
  onRefused: (write: DecidedWrite, identity: ResourceIdentity, reason: string, message: string) => void;
}

/** One change a write made to the folder, for the commit message. */
export interface AppliedChange {
  operation: "create" | "update" | "delete";
  identity: ResourceIdentity;
  path: string;
}

/** The worktree a write is made in: files, the commit it is at, and a commit of the paths it touched. */
export type WorkTree = FileTree & VersionedTree & Pick<Clone, "exists" | "commit">;

/** What a write to a folder is made by when it is made, besides the write itself. */
export interface FolderState {
  /** The target's prune mode now: a retained write may have been decided under another. */
  prune: PruneMode;
  /** The target's collections, for a sweep to leave alone what another one holds. */
  collections: readonly CollectionView[];
}

export interface MaterializeResult {
  /** The new commit, when the write changed the folder. */
  commit?: string;
  /** The acceptance gate refused the folder: nothing was written. */
  refusal?: Refusal;
  /** A snapshot's measurement of the folder's tokens against live: empty when clean. */
  divergences?: MeasuredDivergence[];
  /** Which rung placed each new document; none on a replay. */
  placements: { identity: ResourceIdentity; source: PlacementSource }[];
  /** The actions this write decided: on a first materialization, what a replay will apply. */
  decided: Change[];
}

export async function materialize(
  tree: WorkTree,
  inventory: FolderInventory,
  write: DecidedWrite,
  options: MaterializeOptions,
  state: FolderState = { prune: write.target.prune, collections: [] },
): Promise<MaterializeResult> {
  await inventory.refresh(tree);
  const refusal = inventory.accept();
  if (refusal) return { refusal, placements: [], decided: [] };
  const replay = write.decided !== undefined;

  const folder = write.target.path;
  const writer = new FolderWriter(tree, inventory, {
    targetPath: folder,
    placement: write.target.placement,
    additionalSensitive: options.additionalSensitive,
  });
  const applied: AppliedChange[] = [];
  const decided: Change[] = [];
  const placements: MaterializeResult["placements"] = [];
  const remove = async (identity: ResourceIdentity, key: string, inferred: boolean) => {
    if (!pruneRemoves(state.prune, inferred ? "inferred" : "observed")) return;
    const path = await writer.remove(key);
    if (!path) return;
    applied.push({ operation: "delete", identity, path });
    decided.push({ op: "delete", identity, ...(inferred ? { inferred } : {}) });
  };

  // The snapshot is measured before its own upserts change what it measures; a replay measures
  // nothing, as it decides nothing.
  const divergences = write.sweep && !replay ? await measure(writer, write) : undefined;

  for (const change of write.decided ?? write.changes) {
    const { identity } = change;
    if (change.op === "delete") {
      await remove(identity, identityKeyOf(identity), change.inferred === true);
      continue;
    }
    const outcome = await writer.upsert(identity, change.object);
    if ("refused" in outcome) {
      options.onRefused(write, identity, outcome.reason, outcome.refused);
      continue;
    }
    if (outcome.unwritten)
      options.onRefused(write, identity, outcome.unwritten.reason, outcome.unwritten.refused);
    // A replay places again what its first commit placed: counted once, on that first commit.
    if (outcome.placedBy && !replay) placements.push({ identity, source: outcome.placedBy });
    if (outcome.changed) {
      applied.push({ operation: outcome.created ? "create" : "update", identity, path: outcome.path });
      decided.push(change);
    }
  }

  if (write.sweep && !replay && pruneRemoves(state.prune, "inferred")) {
    const { group, version, resource, kind } = write.sweep.collection;
    for (const doc of inventory.documents()) {
      if (!sweepReaches(doc, write.sweep, state.collections)) continue;
      const identity = { group, version, resource, kind, namespace: doc.namespace, name: doc.name, uid: "" };
      await remove(identity, doc.key, true);
    }
  }

  if (writer.touched.size === 0) return { divergences, placements, decided };
  for (const [path, content] of bootstrapFiles(folder)) {
    if (!tree.exists(path)) {
      await tree.write(path, content);
      writer.touched.add(path);
    }
  }
  const commit = await tree.commit(
    writer.touched,
    options.message(write, applied),
    options.committer,
    options.committer,
  );
  inventory.committed(commit);
  return { commit, divergences, placements, decided };
}

async function measure(writer: FolderWriter, write: DecidedWrite): Promise<MeasuredDivergence[]> {
  const found: MeasuredDivergence[] = [];
  for (const change of write.changes) {
    if (change.op !== "upsert") continue;
    const { kind, namespace, name } = change.identity;
    for (const d of await writer.measure(change.identity, change.object)) {
      found.push({
        document: `${kind} ${namespace ? `${namespace}/` : ""}${name}`,
        path: formatPath(d.path),
        rendered: d.rendered,
        live: typeof d.live === "string" ? d.live : (JSON.stringify(d.live) ?? "(absent)"),
      });
    }
  }
  return found;
}
