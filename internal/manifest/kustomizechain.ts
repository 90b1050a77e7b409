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
 * The chain of kustomizations that build `path`, innermost first. Where two kustomizations
 * include the same file or directory, which one rendered the live object is ambiguous, and
 * the chain stops below them.
 */
export function chainOf(path: string, files: ReadonlyMap<string, FileFacts>): string[] {
  const kustomizations = [...files.values()].filter((f) => f.role === "kustomization");
  const including = (target: string) =>
    kustomizations.filter((k) =>
      entriesOf(k).some((entry) => entry === target || kustomizationIn(entry, files) === target),
    );
  const chain: string[] = [];
  let current = path;
  for (;;) {
    const parents = including(current).filter((k) => !chain.includes(k.path));
    if (parents.length !== 1) return chain;
    current = parents[0]!.path;
    chain.push(current);
  }
}
