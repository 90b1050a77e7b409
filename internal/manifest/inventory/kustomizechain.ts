// Which kustomizations build a file: the one listing it in resources:, then each kustomization
// that includes that one's directory, outwards. Edit-through writes a live value back into the
// override of this chain that produced it.
import { posix } from "node:path";
import type { FileFacts } from "./facts.ts";

const kustomizationNames = ["kustomization.yaml", "kustomization.yml", "Kustomization"];

/** The repository paths each kustomization entry of `kustomization` resolves to. */
function entriesOf(kustomization: FileFacts): string[] {
  const dir = posix.dirname(kustomization.path);
  return (kustomization.kustomization?.resources ?? []).map((entry) =>
    posix.normalize(posix.join(dir, entry)),
  );
}

/** The kustomization file of a directory the folder holds, if any. */
function kustomizationIn(dir: string, files: ReadonlyMap<string, FileFacts>): string | undefined {
  return kustomizationNames
    .map((name) => posix.join(dir, name))
    .find((path) => files.get(path)?.role === "kustomization");
}

/**
 * Which kustomizations include each path, by entry: a file they list, or the kustomization of a
 * directory they list. Built once per change of the folder's kustomizations, so a chain costs a
 * few map lookups however many resources they list.
 */
export function includersOf(files: ReadonlyMap<string, FileFacts>): Map<string, string[]> {
  const includers = new Map<string, string[]>();
  const add = (target: string, kustomization: string) => {
    const known = includers.get(target) ?? [];
    if (!known.includes(kustomization)) includers.set(target, [...known, kustomization]);
  };
  for (const file of files.values()) {
    if (file.role !== "kustomization") continue;
    for (const entry of entriesOf(file)) {
      add(entry, file.path);
      const inside = kustomizationIn(entry, files);
      if (inside) add(inside, file.path);
    }
  }
  return includers;
}

/**
 * The chain of kustomizations that build `path`, innermost first. Where two kustomizations
 * include the same file or directory, which one rendered the live object is ambiguous, and
 * the chain stops below them.
 */
export function chainOf(path: string, includers: ReadonlyMap<string, readonly string[]>): string[] {
  const chain: string[] = [];
  let current = path;
  for (;;) {
    const parents = (includers.get(current) ?? []).filter((k) => !chain.includes(k));
    if (parents.length !== 1) return chain;
    current = parents[0]!;
    chain.push(current);
  }
}
