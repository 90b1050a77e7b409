// A commit of thousands of files into one folder has its folder's tree built by the importer
// (internal/git/engine/foldertree.ts) rather than path by path in fast-import, whose lookup in
// a folder is a linear scan. The rule: the commits are the ones fast-import makes on its own,
// byte for byte, whatever the folder held at the parent, and the repository stays whole.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import { Importer } from "../../../internal/git/engine/importer.ts";
import type { ImportedFile } from "../../../internal/git/engine/importstream.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";

const run = promisify(execFile);
const who = { name: "Operator", email: "operator@example.com" };
const folder = "clusters/big/configmaps";

const file = (path: string, text: string, mode: "100644" | "100755" | "120000" = "100644"): ImportedFile => ({
  path,
  mode,
  content: Buffer.from(text, "utf8"),
});
const gone = (path: string): ImportedFile => ({ path, deleted: true });
const many = (count: number, text: (i: number) => string) =>
  Array.from({ length: count }, (_, i) => file(`${folder}/cm-${String(i).padStart(5, "0")}.yaml`, text(i)));

/**
 * Commits in order, each on the one before (the first on the repository's head, when it has
 * one), all in one importer session; returns each commit's hash.
 */
async function commitAll(dir: string, threshold: number, commits: ImportedFile[][]): Promise<string[]> {
  const importer = new Importer(dir, threshold);
  const head = await run("git", ["rev-parse", "--verify", "-q", "HEAD"], { cwd: dir }).then(
    (r) => r.stdout.trim(),
    () => undefined,
  );
  let parent: string | number | undefined = head;
  const made: Promise<{ commit: string }>[] = [];
  for (const [i, files] of commits.entries()) {
    const sent = importer.commit({
      author: who,
      committer: who,
      when: 1_700_000_000 + i,
      message: `c${i}\n`,
      files,
      parent,
    });
    parent = sent.mark;
    made.push(sent.made);
  }
  const hashes = await Promise.all(made).then(
    (all) => all.map((m) => m.commit),
    async (err: unknown) => {
      await importer.kill();
      throw err;
    },
  );
  await importer.end();
  await run("git", ["update-ref", "HEAD", hashes.at(-1)!], { cwd: dir });
  return hashes;
}

async function newRepository(root: string, name: string, format = "sha1"): Promise<string> {
  const dir = join(root, name);
  await run("git", ["init", "-q", `--object-format=${format}`, dir]);
  return dir;
}

/** The same commits made both ways, in two repositories: their hashes, side by side. */
async function bothWays(
  root: string,
  name: string,
  before: ImportedFile[][],
  commits: ImportedFile[][],
  format?: string,
) {
  const result: string[][] = [];
  for (const [way, threshold] of [
    ["plain", Number.POSITIVE_INFINITY],
    ["trees", 10],
  ] as const) {
    const dir = await newRepository(root, `${name}-${way}`, format);
    if (before.length > 0) await commitAll(dir, Number.POSITIVE_INFINITY, before);
    result.push(await commitAll(dir, threshold, commits));
    await run("git", ["fsck", "--full", "--no-dangling"], { cwd: dir });
  }
  return { plain: result[0]!, trees: result[1]! };
}

describe("a commit of thousands of files into one folder", () => {
  let root: string;
  before(() => (root = makeOwnedTempDir("largefolder-test")));
  after(() => removeOwnedTempDir(root));

  it("makes the commit fast-import makes, into a folder that did not exist", async () => {
    const { plain, trees } = await bothWays(
      root,
      "new",
      [],
      [[file("README.md", "hello\n"), ...many(1_500, (i) => `i: ${i}\n`)]],
    );
    assert.deepEqual(trees, plain);
  });

  it("merges the folder's entries at the parent: kept, replaced, deleted, a sub-folder, odd names and modes", async () => {
    const base = [
      file("README.md", "hello\n"),
      ...many(400, (i) => `base: ${i}\n`),
      file(`${folder}/sub/deep.yaml`, "deep: 1\n"),
      file(`${folder}/gone/x.yaml`, "x: 1\n"),
      file(`${folder}/run.sh`, "#!/bin/sh\n", "100755"),
      file(`${folder}/link`, "cm-00001.yaml", "120000"),
      file(`${folder}/was-a-folder/y.yaml`, "y: 1\n"),
    ];
    const odd = [
      'a "quoted" name.yaml',
      "tab\there.yaml",
      "new\nline.yaml",
      "back\\slash.yaml",
      "ünïcödé ✓.yaml",
    ];
    const first = [
      ...many(1_200, (i) => `first: ${i}\n`).filter((_, i) => i % 7 !== 0),
      ...odd.map((name) => file(`${folder}/${name}`, `${name}\n`)),
      gone(`${folder}/cm-00003.yaml`),
      gone(`${folder}/gone`),
      file(`${folder}/was-a-folder`, "now a file\n"),
      file(`${folder}/run.sh`, "#!/bin/sh\necho\n", "100644"),
      file(`${folder}/sub/deeper/z.yaml`, "z: 1\n"),
      file("elsewhere/a.yaml", "a: 1\n"),
    ];
    // On the first commit's mark: the folder's tree at the parent is only in fast-import's memory.
    const second = [
      ...many(1_100, (i) => `second: ${i}\n`).filter((_, i) => i % 5 !== 0),
      ...Array.from({ length: 300 }, (_, i) => gone(`${folder}/cm-${String(i * 3).padStart(5, "0")}.yaml`)),
      gone(`${folder}/${odd[2]!}`),
    ];
    const { plain, trees } = await bothWays(root, "merge", [base], [first, second]);
    assert.deepEqual(trees, plain);
  });

  it("removes a folder whose every file the commit deletes", async () => {
    const base = [file("README.md", "hello\n"), ...many(1_200, (i) => `base: ${i}\n`)];
    const { plain, trees } = await bothWays(
      root,
      "empty",
      [base],
      [many(1_200, () => "").map((f) => gone(f.path))],
    );
    assert.deepEqual(trees, plain);
    const dir = join(root, "empty-trees");
    const { stdout } = await run("git", ["ls-tree", "-r", "--name-only", "HEAD"], { cwd: dir });
    assert.deepEqual(stdout.split("\n").filter(Boolean), ["README.md"]);
  });

  it("names blobs as a SHA-256 repository does", async () => {
    const { plain, trees } = await bothWays(root, "sha256", [], [many(1_100, (i) => `i: ${i}\n`)], "sha256");
    assert.deepEqual(trees, plain);
    assert.equal(trees[0]!.length, 64);
  });
});
