// The folder acceptance gate: a structure-only verdict, taken before anything is planned, on
// whether the operator can manage a folder at all. It reads only each file's cached facts, so a
// commit to a large folder costs one pass over them and no parsing.
import { posix } from "node:path";
import { finding, type DocumentFacts, type FileFacts } from "./facts.ts";

/** Why a folder is refused; the message names the file and the feature and says what clears it. */
export interface Refusal {
  path: string;
  feature: string;
  message: string;
}

/**
 * The folder's verdict from every file's facts: the first refusal in path order, or undefined
 * when the folder is accepted. Includes the cross-file rule: a duplicate identity (two
 * documents, anywhere in the folder, with the same key).
 */
export function acceptFolder(files: Iterable<FileFacts>): Refusal | undefined {
  const sorted = [...files].sort((a, b) => compareCodeUnits(a.path, b.path));
  const problem = sorted.find((file) => file.findings.length > 0)?.findings[0];
  if (problem) return problem;
  const patches = patchFiles(sorted);
  const seen = new Map<string, string>();
  for (const file of sorted.filter((file) => !patches.has(file.path))) {
    for (const document of file.documents) {
      const first = seen.get(document.key);
      if (first !== undefined) return duplicate(file.path, first, document);
      seen.set(document.key, file.path);
    }
  }
  return undefined;
}

// A strategic-merge patch file restates the identity of the object it patches: it is build
// context the operator reads, not a second copy of the object.
function patchFiles(files: FileFacts[]): Set<string> {
  return new Set(
    files.flatMap((file) =>
      (file.kustomization?.patchPaths ?? []).map((patch) => posix.join(posix.dirname(file.path), patch)),
    ),
  );
}

function duplicate(path: string, firstPath: string, document: DocumentFacts): Refusal {
  const identity = [document.kind, document.namespace, document.name].filter((part) => part !== "").join("/");
  const elsewhere = firstPath === path ? "twice in this file" : `also in ${firstPath}`;
  return finding(path, "duplicate identity", `${identity}, ${elsewhere}`);
}

// Code-unit order: the same on every machine, unlike localeCompare.
function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
