import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  blobId,
  folderOf,
  largeFolders,
  mergedEntries,
  mktreeInput,
  parseTreeListing,
} from "../../../../internal/git/engine/foldertree.ts";
import { listedTree } from "../../../../internal/git/engine/importstream.ts";

const put = (path: string, text = "x\n") => ({ path, mode: "100644" as const, content: Buffer.from(text) });

describe("a large folder's tree, built outside fast-import", () => {
  it("takes only the folders one commit writes enough direct files into, shallowest first, never the root", () => {
    const files = [
      put("a/b/1"),
      put("a/b/2"),
      put("a/1"),
      put("a/2"),
      put("a/b/c/1"),
      put("top"),
      put("top2"),
    ];
    assert.deepEqual(
      largeFolders(files, 2).map((f) => [f.path, f.files.map((x) => x.path)]),
      [
        ["a", ["a/1", "a/2"]],
        ["a/b", ["a/b/1", "a/b/2"]],
      ],
    );
    assert.equal(folderOf("top"), undefined);
    assert.equal(folderOf("a/b/c"), "a/b");
  });

  it("names a blob as git hash-object does", () => {
    // git hash-object of "x\n", in a SHA-1 and in a SHA-256 repository.
    assert.equal(blobId(Buffer.from("x\n"), "sha1"), "587be6b4c3f93f93c489c0111bba5596147a26cb");
    assert.equal(
      blobId(Buffer.from("x\n"), "sha256"),
      "14f5162e2fe3d240d0d37aaab0f90e4af9a7cfa79639f3bab005b5bfb4174d9f",
    );
  });

  it("keeps the parent's entries the commit does not name, replaces those it writes and drops those it deletes", () => {
    const id = "1".repeat(40);
    const parent = parseTreeListing(
      Buffer.from(
        [
          `100644 blob ${id}\tkept`,
          `040000 tree ${id}\tsub`,
          `100644 blob ${id}\tnew\nline`,
          `100755 blob ${id}\trun`,
          "",
        ].join("\u0000"),
      ),
    );
    assert.equal(parent[2]!.name, "new\nline");
    const merged = mergedEntries(
      parent,
      { path: "f", files: [put("f/sub", "now a file\n"), { path: "f/run", deleted: true }, put("f/added")] },
      "sha1",
    );
    assert.deepEqual(
      merged.map((e) => [e.mode, e.type, e.name]),
      [
        ["100644", "blob", "kept"],
        ["100644", "blob", "sub"],
        ["100644", "blob", "new\nline"],
        ["100644", "blob", "added"],
      ],
    );
    assert.equal(merged[1]!.id, blobId(Buffer.from("now a file\n"), "sha1"));
    assert.equal(mktreeInput(merged.slice(0, 1)).toString(), `100644 blob ${id}\tkept\u0000`);
  });

  it("reads what fast-import's ls answers for a folder: a tree, nothing, or a file in its place", () => {
    const id = "2".repeat(40);
    assert.equal(listedTree(`040000 tree ${id}\tf`), id);
    assert.equal(listedTree('missing "f"'), undefined);
    assert.equal(listedTree(`100644 blob ${id}\tf`), undefined);
    assert.throws(() => listedTree("fatal"));
  });
});
