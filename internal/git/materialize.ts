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
  message: string;
  /** Called for each object refused fail-safe, so it can be logged, counted and reported. */
  onRefused: (write: DecidedWrite, identity: ResourceIdentity, reason: string) => void;
}

const refusedSensitive =
  "a sensitive resource is written only encrypted, and encryption is not available yet";

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

  for (const change of write.changes) {
    const { identity } = change;
    const key = identityKey(identity.group, identity.kind, identity.namespace, identity.name);
    if (change.op === "delete") {
      const path = await deleteDocument(clone, inventory, key);
      if (path) touched.add(path);
      continue;
    }
    if (isSensitive(identity, options.additionalSensitive)) {
      options.onRefused(write, identity, refusedSensitive);
      continue;
    }
    touched.add(await upsertDocument(clone, inventory, change.object, builtInPath(folder, identity, false)));
  }

  if (write.sweep && write.target.prune === "Always") {
    const { collection, present } = write.sweep;
    for (const key of [...inventory.keys()]) {
      const [group, kind, namespace, name] = key.split("/");
      const inScope =
        group === collection.group &&
        kind === collection.kind &&
        (collection.namespace === "" || namespace === collection.namespace);
      if (inScope && !present.has(`${namespace}/${name}`)) {
        const path = await deleteDocument(clone, inventory, key);
        if (path) touched.add(path);
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
  return clone.commit(touched, options.message, options.committer, options.committer);
}
