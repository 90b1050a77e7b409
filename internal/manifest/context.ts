// What a folder's kustomizations read from outside it: an overlay's `../base`. Those documents
// are build context, read and never written: a live change to one of them is written back
// through the folder's own images:/replicas: overrides, or refused, and never placed again
// inside the folder, where it would duplicate the base's document in the build.
import { posix } from "node:path";
import { fileFacts, isYamlPath } from "./facts.ts";
import type { DocumentLocation, FileTree } from "./folder.ts";
import type { FolderInventory } from "./inventory.ts";

/** A document outside the folder, and the folder's kustomizations that include it. */
export interface ContextDocument extends DocumentLocation {
  including: string[];
}

const isInside = (path: string, folder: string) =>
  folder === "." || path === folder || path.startsWith(`${folder}/`);

/** The documents the folder's kustomizations read from outside it, by identity key. */
export async function readContext(
  tree: Pick<FileTree, "list" | "read">,
  inventory: FolderInventory,
): Promise<Map<string, ContextDocument>> {
  const context = new Map<string, ContextDocument>();
  for (const kustomization of inventory.kustomizations()) {
    const dir = posix.dirname(kustomization);
    for (const entry of inventory.fileAt(kustomization)?.kustomization?.resources ?? []) {
      const target = posix.normalize(posix.join(dir, entry));
      if (isInside(target, inventory.folder)) continue;
      const paths = isYamlPath(target) ? [target] : await tree.list(target);
      for (const path of paths.filter(isYamlPath).sort()) {
        const content = await tree.read(path);
        if (content === undefined) continue;
        for (const doc of fileFacts(path, content).documents) {
          const known = context.get(doc.key);
          if (known) known.including.push(kustomization);
          else context.set(doc.key, { path, index: doc.index, including: [kustomization] });
        }
      }
    }
  }
  return context;
}
