// Signed commits. fast-import (Debian's git 2.39) cannot sign, so the clone's commits are made
// unsigned and signed when they are pushed: each commit the push carries is written again with
// its parent's signed hash and a gpgsig header, as `git commit -S` writes it with gpg.format=ssh
// or openpgp, and the push sends the signed tip. The key makes the armored signature, SSH or
// OpenPGP (internal/signing/key.ts); git tells which from its armor. The trees are the same, so
// nothing is read or written again but the commit objects, which go straight into the object
// store as loose objects.
import { createHash } from "node:crypto";
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { deflateSync } from "node:zlib";
import type { SigningKey } from "../../signing/key.ts";
import { runGit } from "./gitexec.ts";

/** Signs every commit after `base` up to `head` (all of them when there is no base), in order; returns the signed head. */
export async function signCommits(
  dir: string,
  base: string | undefined,
  head: string,
  key: SigningKey,
): Promise<string> {
  const range = base ? [head, `^${base}`] : [head];
  const listed = (await runGit(["rev-list", "--reverse", "--topo-order", ...range], { cwd: dir })).stdout;
  const commits = listed.toString("utf8").split("\n").filter(Boolean);
  if (commits.length === 0) return head;
  const objects = await readCommits(dir, commits);
  const signedAs = new Map<string, string>();
  for (const commit of commits) {
    const content = objects.get(commit)!;
    const signed = await signedCommit(content, signedAs, key);
    signedAs.set(commit, signed === content ? commit : writeLooseCommit(dir, signed));
  }
  return signedAs.get(head)!;
}

/**
 * A commit object signed: its parents replaced by their signed hashes, any signature dropped,
 * and a gpgsig header over the rest. The signed payload is the object without that header,
 * which is what `git verify-commit` checks.
 */
export async function signedCommit(
  content: string,
  signedAs: ReadonlyMap<string, string>,
  key: SigningKey,
): Promise<string> {
  const split = content.indexOf("\n\n");
  const headerText = split < 0 ? content : content.slice(0, split);
  const body = split < 0 ? "" : content.slice(split);
  const headers: string[] = [];
  let inSignature = false;
  for (const line of headerText.split("\n")) {
    if (line.startsWith("gpgsig ")) inSignature = true;
    else if (!(inSignature && line.startsWith(" "))) inSignature = false;
    if (inSignature) continue;
    const parent = /^parent ([0-9a-f]{40,64})$/.exec(line);
    headers.push(parent ? `parent ${signedAs.get(parent[1]!) ?? parent[1]}` : line);
  }
  const payload = `${headers.join("\n")}${body}`;
  // Each line of the armor continued with a space; its blank line (OpenPGP's, after the BEGIN
  // line) becomes a line of one space, as git writes it.
  const signature = (await key.signCommit(payload)).trimEnd().split("\n").join("\n ");
  return `${headers.join("\n")}\ngpgsig ${signature}${body}`;
}

/** The commits' objects, by hash, from one `git cat-file --batch`. */
async function readCommits(dir: string, commits: string[]): Promise<Map<string, string>> {
  const { stdout } = await runGit(["cat-file", "--batch"], { cwd: dir, input: `${commits.join("\n")}\n` });
  const objects = new Map<string, string>();
  let at = 0;
  while (at < stdout.length) {
    const end = stdout.indexOf(10, at);
    const [hash = "", type, size] = stdout.subarray(at, end).toString("utf8").split(" ");
    if (type !== "commit") throw new Error(`${hash} is not a commit`);
    const length = Number(size);
    objects.set(hash, stdout.subarray(end + 1, end + 1 + length).toString("utf8"));
    at = end + 1 + length + 1;
  }
  return objects;
}

/** Writes a commit object into the clone's object store, as git writes a loose object; returns its hash. */
function writeLooseCommit(dir: string, content: string): string {
  const bytes = Buffer.from(content, "utf8");
  const object = Buffer.concat([Buffer.from(`commit ${bytes.length}\0`, "utf8"), bytes]);
  const hash = createHash("sha1").update(object).digest("hex");
  const folder = join(dir, ".git", "objects", hash.slice(0, 2));
  mkdirSync(folder, { recursive: true });
  const file = join(folder, hash.slice(2));
  const partial = `${file}.${process.pid}.tmp`;
  writeFileSync(partial, deflateSync(object), { mode: 0o444 });
  renameSync(partial, file);
  return hash;
}
