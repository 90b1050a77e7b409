// The folder acceptance gate: a structure-only verdict, taken before anything is planned, on
// whether the operator can manage a folder at all. It reads only each file's cached facts, so a
// commit to a large folder costs one pass over them and no parsing.
import { posix } from "node:path";
import { finding, type DocumentFacts, type FileFacts, type Finding } from "./facts.ts";

/** Why a folder is refused: every problem in it, so one commit can clear them all. */
export interface Refusal {
  /** In path order, and in file order within a file; never empty. */
  problems: Finding[];
  /** The condition message: the problem itself, or the first few of several and how many more. */
  message: string;
}

/** How many problems a message spells out; a longer list would bury the first. */
export const shownProblems = 5;

/**
 * The folder's verdict from every file's facts: every problem, or undefined when the folder is
 * accepted. Includes the cross-file rules: a duplicate identity (two documents, anywhere in the
 * folder, with the same key), and a targeted patch whose file the gate cannot read.
 */
export function acceptFolder(files: Iterable<FileFacts>): Refusal | undefined {
  const sorted = [...files].sort((a, b) => compareCodeUnits(a.path, b.path));
  const patches = patchFiles(sorted);
  const problems = [
    ...sorted.flatMap((file) => file.findings),
    ...unreadablePatches(sorted),
    ...duplicates(sorted.filter((file) => !patches.has(file.path))),
  ].sort((a, b) => compareCodeUnits(a.path, b.path));
  return problems.length === 0 ? undefined : refusalOf(problems);
}

/** A refusal of these problems (at least one), with its bounded message. */
export function refusalOf(problems: Finding[]): Refusal {
  return { problems, message: refusalMessage(problems) };
}

/** The condition message of a refusal: bounded, so a folder of a thousand problems stays readable. */
export function refusalMessage(problems: readonly Finding[]): string {
  if (problems.length === 1) return problems[0]!.message;
  const shown = problems.slice(0, shownProblems).map((problem, index) => `${index + 1}. ${problem.summary}`);
  const more = problems.length > shownProblems ? `; and ${problems.length - shownProblems} more` : "";
  return (
    `${problems.length} problems keep the operator from writing this folder; fix them in one commit: ` +
    `${shown.join("; ")}${more}`
  );
}

// A strategic-merge patch file restates the identity of the object it patches: it is build
// context the operator reads, not a second copy of the object.
function patchFiles(files: FileFacts[]): Set<string> {
  return new Set(files.flatMap((file) => patchesOf(file, "patchPaths").map(({ resolved }) => resolved)));
}

function patchesOf(file: FileFacts, list: "patchPaths" | "targetedPatchPaths") {
  return (file.kustomization?.[list] ?? []).map((patch) => ({
    patch,
    resolved: posix.join(posix.dirname(file.path), patch),
  }));
}

function unreadablePatches(files: FileFacts[]): Finding[] {
  const read = new Set(files.map((file) => file.path));
  return files.flatMap((file) => unreadablePatchesOf(file, (path) => read.has(path)));
}

/**
 * The targeted patches a file's kustomization names that the gate does not read (`read` says
 * which files it does). Only the content of a targeted patch says whether it is a
 * strategic-merge patch (read-only context) or a JSON6902 op list (refused); a file the gate
 * does not read could be either.
 */
export function unreadablePatchesOf(file: FileFacts, read: (path: string) => boolean): Finding[] {
  return patchesOf(file, "targetedPatchPaths")
    .filter(({ resolved }) => !read(resolved))
    .map(({ patch }) => finding(file.path, "unreadable targeted patch", patch));
}

function duplicates(files: FileFacts[]): Finding[] {
  const seen = new Map<string, string>();
  const found: Finding[] = [];
  for (const file of files) {
    for (const document of file.documents) {
      const first = seen.get(document.key);
      if (first !== undefined) found.push(duplicate(file.path, first, document));
      else seen.set(document.key, file.path);
    }
  }
  return found;
}

function duplicate(path: string, firstPath: string, document: DocumentFacts): Finding {
  const identity = [document.kind, document.namespace, document.name].filter((part) => part !== "").join("/");
  const elsewhere = firstPath === path ? "twice in this file" : `also in ${firstPath}`;
  return finding(path, "duplicate identity", `${identity}, ${elsewhere}`);
}

// Code-unit order: the same on every machine, unlike localeCompare.
function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
