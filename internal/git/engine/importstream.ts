// The text of `git fast-import` commands (importer.ts runs them). Pure: a commit request in,
// the bytes of its command out, so the stream's grammar is tested without a process.
import type { Signature } from "../../types/signature.ts";

/** One file of a commit: its new content, or absent (deleted). */
export type ImportedFile =
  { path: string; mode: "100644" | "100755" | "120000"; content: Buffer } | { path: string; deleted: true };

export interface ImportedCommit {
  /** The ref the importer moves; never the branch, which only a reset moves. */
  ref: string;
  mark: number;
  /**
   * The commit this one follows, as fast-import names it: a hash the repository holds, or
   * `:mark` for one this stream made (its objects are not in the repository yet). Undefined
   * for a branch's first commit.
   */
  from: string | undefined;
  author: Signature;
  committer: Signature;
  /** Seconds since the epoch, UTC. */
  when: number;
  message: string;
  files: readonly ImportedFile[];
  /**
   * Folders whose whole tree is given (foldertree.ts), set before `files`, shallowest first: a
   * tree the repository holds, or undefined for a folder left empty, which is removed.
   */
  folders?: readonly { path: string; tree: string | undefined }[];
}

/**
 * A path as fast-import reads it: C-style quoted, so spaces, quotes, backslashes and newlines
 * in a file name are taken literally (git unquotes the same escapes it writes).
 */
export function quotePath(path: string): string {
  const escaped = path.replace(
    /[\\"\n\t\r]/g,
    (c) => ({ "\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r" })[c]!,
  );
  return `"${escaped}"`;
}

/**
 * An identity as git records it. fast-import refuses `<`, `>` and newlines in one, where
 * commit-tree drops them, so they are dropped here, the way commit-tree does.
 */
export function identity(who: Signature, when: number): string {
  const clean = (s: string) => s.replace(/[<>\n\r\0]/g, "").trim();
  return `${clean(who.name)} <${clean(who.email)}> ${when} +0000`;
}

function data(content: Buffer | string): Buffer[] {
  const bytes = typeof content === "string" ? Buffer.from(content, "utf8") : content;
  return [Buffer.from(`data ${bytes.length}\n`), bytes, Buffer.from("\n")];
}

/**
 * A commit command, then the two queries whose answers the importer reads back in this order:
 * the new commit's root tree (`ls :mark ""`), then its hash (`get-mark`). A first commit resets
 * the import ref, since a commit without `from` would otherwise follow the ref's last tip.
 */
export function commitCommand(commit: ImportedCommit): Buffer[] {
  const { ref, mark, from, author, committer, when, message, files } = commit;
  const out: Buffer[] = [];
  const text = (s: string) => out.push(Buffer.from(s, "utf8"));
  if (!from) text(`reset ${ref}\n\n`);
  text(`commit ${ref}\nmark :${mark}\n`);
  text(`author ${identity(author, when)}\ncommitter ${identity(committer, when)}\n`);
  out.push(...data(message));
  if (from) text(`from ${from}\n`);
  for (const folder of commit.folders ?? []) {
    text(
      folder.tree ? `M 040000 ${folder.tree} ${quotePath(folder.path)}\n` : `D ${quotePath(folder.path)}\n`,
    );
  }
  for (const file of files) {
    if ("deleted" in file) {
      text(`D ${quotePath(file.path)}\n`);
    } else {
      text(`M ${file.mode} inline ${quotePath(file.path)}\n`);
      out.push(...data(file.content));
    }
  }
  text(`\nls :${mark} ""\nget-mark :${mark}\n`);
  return out;
}

/** A blob with no mark: fast-import stores it, and a tree given by its hash names it. */
export function blobCommand(content: Buffer): Buffer[] {
  return [Buffer.from("blob\n"), ...data(content)];
}

/**
 * What an `ls` answered for a path: its tree, or nothing there (or a file, which a folder's
 * tree replaces).
 */
export function listedTree(line: string): string | undefined {
  if (line.startsWith("missing ")) return undefined;
  const match = /^(\d{6}) (\w+) ([0-9a-f]{40,64})\t/.exec(line);
  if (!match) throw new Error(`git fast-import answered "${line}" where it lists a path`);
  return match[2] === "tree" ? match[3]! : undefined;
}

/** The tree an `ls` of a root names: `040000 tree <hash>\t`. */
export function treeOfListing(line: string): string {
  const tree = line.startsWith("missing ") ? undefined : listedTree(line);
  if (tree === undefined) throw new Error(`git fast-import answered "${line}" where it lists a tree`);
  return tree;
}
