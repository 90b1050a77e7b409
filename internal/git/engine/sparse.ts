// Which directories of the repository a clone checks out: the worker's target folders, and the
// directories their kustomizations build from outside them (an overlay's ../base), so a
// monorepo's other files cost neither checkout time nor disk. Pure: the clone applies the
// answer with `git sparse-checkout` in cone mode.
import { posix } from "node:path";

/** Every directory, or the fewest directories that hold the given ones. */
export type Cover = "all" | readonly string[];

function normalized(folder: string): string {
  const path = posix.normalize(folder).replace(/\/+$/, "");
  return path === "." ? "" : path;
}

/** Whether `path` is `dir` or inside it. */
function within(path: string, dir: string): boolean {
  return path === dir || path.startsWith(`${dir}/`);
}

/** The cover of `folders`: the whole repository if one of them is its root. */
export function coverOf(folders: Iterable<string>): Cover {
  const dirs = [...new Set([...folders].map(normalized))].sort();
  if (dirs.includes("")) return "all";
  return dirs.filter((dir) => !dirs.some((other) => other !== dir && within(dir, other)));
}

/** Whether a cover already holds `folder`. */
export function covers(cover: Cover, folder: string): boolean {
  const path = normalized(folder);
  return cover === "all" || cover.some((dir) => within(path, dir));
}

/** A resources entry kustomize would fetch rather than read from the repository. */
function isRemote(entry: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(entry) || entry.startsWith("git@") || /\?(ref|version)=/.test(entry);
}

/**
 * The directories a kustomization's `resources:` (and `bases:`) entries name that the cover
 * does not hold yet, as repository paths. Entries that leave the repository, or name a remote,
 * are kustomize's to refuse, not directories to check out.
 */
export function uncoveredReferences(
  kustomizationPath: string,
  resources: readonly string[],
  cover: Cover,
): string[] {
  const dir = posix.dirname(kustomizationPath);
  return resources
    .filter((entry) => !isRemote(entry))
    .map((entry) => normalized(posix.join(dir, entry)))
    .filter((path) => !path.startsWith("..") && !covers(cover, path));
}
