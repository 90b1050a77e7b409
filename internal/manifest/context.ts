// What a folder's kustomizations read from outside it: an overlay's `../base`. Those documents
// are build context, read and never written: a live change to one of them is written back
// through the folder's own images:/replicas: overrides, or refused, and never placed again
// inside the folder, where it would duplicate the base's document in the build.
import { posix } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { fileFacts, isYamlPath } from "./inventory/facts.ts";
import type { DocumentLocation, FileTree } from "./document/tree.ts";
import type { FolderInventory } from "./inventory/inventory.ts";
import { isRecord } from "./document/rendermeasure.ts";

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

/**
 * Whether a live change to a context document leaves live equal to the folder as rendered: every
 * value of `live` equals the rendered object's, except where an images: or replicas: override of
 * the folder expresses it, which is where the edit-through put the document's own value back in
 * `desired`. An overlay's patches are in the render, so a value they set is no change.
 */
export function rendersLive(live: unknown, rendered: unknown, desired: unknown): boolean {
  if (isDeepStrictEqual(live, rendered)) return true;
  if (isScalar(live)) return !isDeepStrictEqual(desired, live);
  if (Array.isArray(live) && Array.isArray(rendered) && live.length === rendered.length) {
    return live.every((item, i) =>
      rendersLive(item, rendered[i], Array.isArray(desired) ? desired[i] : item),
    );
  }
  if (!isRecord(live) || !isRecord(rendered)) return false;
  const keys = new Set([...Object.keys(live), ...Object.keys(rendered)]);
  return [...keys].every((key) =>
    rendersLive(live[key], rendered[key], isRecord(desired) ? desired[key] : live[key]),
  );
}

const isScalar = (value: unknown) => value === null || typeof value !== "object";
