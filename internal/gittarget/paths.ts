// Among GitTargets on one GitBranch, from any namespace, no two may own overlapping folders: two
// writers of one document would undo each other's edits.
import type { GitTarget } from "../../generated/v1alpha3/index.ts";

/** "." is the repository root; every other path is compared by its segments. */
export function pathsOverlap(a: string, b: string): boolean {
  const segments = (p: string) => (p === "." ? [] : p.split("/"));
  const [x, y] = [segments(a), segments(b)];
  const shorter = x.length <= y.length ? x : y;
  const longer = shorter === x ? y : x;
  return shorter.every((s, i) => longer[i] === s);
}

/** Older first: creation time, then uid, so every reconcile agrees on who came first. */
export function olderFirst(a: GitTarget, b: GitTarget): number {
  const ta = String(a.metadata.creationTimestamp ?? "");
  const tb = String(b.metadata.creationTimestamp ?? "");
  if (ta !== tb) return new Date(ta).getTime() - new Date(tb).getTime();
  return (a.metadata.uid ?? "").localeCompare(b.metadata.uid ?? "");
}

/**
 * The older target whose folder overlaps `target`'s on the same GitBranch, if any: the older
 * one keeps its folder, and `target` is refused in status.
 */
export function overlappingOlder(target: GitTarget, sameBranch: GitTarget[]): GitTarget | undefined {
  return sameBranch
    .filter((other) => other.metadata.uid !== target.metadata.uid)
    .filter((other) => pathsOverlap(other.spec.path, target.spec.path))
    .filter((other) => olderFirst(other, target) < 0)
    .sort(olderFirst)[0];
}
