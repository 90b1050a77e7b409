// Makes one decided write in the clone and commits it: upserts where each document lives (or at
// its built-in path), deletes, and for a snapshot under prune Always the sweep of its own
// collection. Sensitive objects are refused until encryption exists: never written.
import { bootstrapFiles } from "../manifest/bootstrap.ts";
import {
  deleteDocument,
  identityKey,
  scanFolder,
  upsertDocument,
  type FileTree,
} from "../manifest/folder.ts";
import { builtInPath, isSensitive } from "../manifest/placement.ts";
import type { ResourceIdentity } from "../watch/stream.ts";
import type { Clone, Signature } from "./clone.ts";
import type { DecidedWrite } from "./writes.ts";

export interface MaterializeOptions {
  committer: Signature;
  /** resource.group names treated as sensitive besides core Secrets. */
  additionalSensitive: readonly string[];
  /** The commit message, from the write and what it changed. */
  message: (write: DecidedWrite, applied: AppliedChange[]) => string;
  /** Called for each object refused fail-safe, so it can be logged, counted and reported. */
  onRefused: (write: DecidedWrite, identity: ResourceIdentity, reason: string) => void;
}

const refusedSensitive =
  "a sensitive resource is written only encrypted, and encryption is not available yet";

/** One change a write made to the folder, for the commit message. */
export interface AppliedChange {
  operation: "create" | "update" | "delete";
  identity: ResourceIdentity;
  path: string;
}

/** The worktree a write is made in: files, and a commit of the paths it touched. */
export type WorkTree = FileTree & Pick<Clone, "exists" | "commit">;

/** Returns the new commit, or undefined when the write changed nothing in the folder. */
export async function materialize(
  clone: WorkTree,
  write: DecidedWrite,
  options: MaterializeOptions,
): Promise<string | undefined> {
  const folder = write.target.path;
  const inventory = await scanFolder(clone, folder);
  const touched = new Set<string>();
  const applied: AppliedChange[] = [];
  const remove = async (identity: ResourceIdentity, key: string) => {
    const path = await deleteDocument(clone, inventory, key);
    if (path) {
      touched.add(path);
      applied.push({ operation: "delete", identity, path });
    }
  };

  for (const change of write.changes) {
    const { identity } = change;
    const key = identityKey(identity.group, identity.kind, identity.namespace, identity.name);
    if (change.op === "delete") {
      await remove(identity, key);
      continue;
    }
    if (isSensitive(identity, options.additionalSensitive)) {
      options.onRefused(write, identity, refusedSensitive);
      continue;
    }
    const { path, created, changed } = await upsertDocument(
      clone,
      inventory,
      change.object,
      builtInPath(folder, identity, false),
    );
    if (changed) {
      touched.add(path);
      applied.push({ operation: created ? "create" : "update", identity, path });
    }
  }

  if (write.sweep && write.target.prune === "Always") {
    const { collection, present } = write.sweep;
    for (const key of [...inventory.keys()]) {
      const [group = "", kind = "", namespace = "", name = ""] = key.split("/");
      const inScope =
        group === collection.group &&
        kind === collection.kind &&
        (collection.namespace === "" || namespace === collection.namespace);
      if (inScope && !present.has(`${namespace}/${name}`)) {
        const { version, resource } = collection;
        await remove({ group, version, resource, kind, namespace, name, uid: "" }, key);
      }
    }
  }

  if (touched.size === 0) return undefined;
  for (const [path, content] of bootstrapFiles(folder)) {
    if (!clone.exists(path)) {
      await clone.write(path, content);
      touched.add(path);
    }
  }
  return clone.commit(touched, options.message(write, applied), options.committer, options.committer);
}
