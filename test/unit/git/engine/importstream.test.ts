import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  commitCommand,
  identity,
  quotePath,
  treeOfListing,
} from "../../../../internal/git/engine/importstream.ts";

const who = { name: "Jane Doe", email: "jane@example.com" };

describe("the fast-import stream", () => {
  it("quotes every path, so odd file names are taken literally", () => {
    assert.equal(quotePath("apps/a.yaml"), '"apps/a.yaml"');
    assert.equal(quotePath('we "said"\\ it\n\tnow.yaml'), '"we \\"said\\"\\\\ it\\n\\tnow.yaml"');
  });

  it("drops from an identity what git would refuse, as commit-tree does", () => {
    assert.equal(identity(who, 1700000000), "Jane Doe <jane@example.com> 1700000000 +0000");
    assert.equal(identity({ name: " <evil>\nname ", email: "<a@b>" }, 1), "evilname <a@b> 1 +0000");
  });

  it("writes a commit on its parent, with inline contents sized in bytes, then asks for its tree and hash", () => {
    const text = Buffer.concat(
      commitCommand({
        ref: "refs/x",
        mark: 3,
        from: "a".repeat(40),
        author: who,
        committer: who,
        when: 5,
        message: "Update é\n",
        files: [
          { path: "f/a.yaml", mode: "100644", content: Buffer.from("ä: 1\n") },
          { path: "f/gone.yaml", deleted: true },
        ],
      }),
    ).toString("utf8");
    assert.equal(
      text,
      [
        "commit refs/x",
        "mark :3",
        "author Jane Doe <jane@example.com> 5 +0000",
        "committer Jane Doe <jane@example.com> 5 +0000",
        "data 10",
        "Update é\n",
        `from ${"a".repeat(40)}`,
        'M 100644 inline "f/a.yaml"',
        "data 6",
        "ä: 1\n",
        'D "f/gone.yaml"',
        "",
        'ls :3 ""',
        "get-mark :3",
        "",
      ].join("\n"),
    );
  });

  it("starts a branch's first commit from nothing, not from the import ref's last tip", () => {
    const text = Buffer.concat(
      commitCommand({
        ref: "refs/x",
        mark: 1,
        from: undefined,
        author: who,
        committer: who,
        when: 1,
        message: "m",
        files: [],
      }),
    ).toString("utf8");
    assert.match(text, /^reset refs\/x\n\ncommit refs\/x\n/);
    assert.doesNotMatch(text, /\nfrom /);
  });

  it("sets a folder given whole before the commit's files, and removes one left empty", () => {
    const tree = "c".repeat(40);
    const text = Buffer.concat(
      commitCommand({
        ref: "refs/x",
        mark: 2,
        from: ":1",
        author: who,
        committer: who,
        when: 1,
        message: "m",
        files: [{ path: "f/sub/a.yaml", deleted: true }],
        folders: [
          { path: "f", tree },
          { path: "g h", tree: undefined },
        ],
      }),
    ).toString("utf8");
    assert.match(text, new RegExp(`\nfrom :1\nM 040000 ${tree} "f"\nD "g h"\nD "f/sub/a.yaml"\n`));
  });

  it("reads the tree out of a root listing, and refuses anything else", () => {
    assert.equal(treeOfListing(`040000 tree ${"b".repeat(40)}\t`), "b".repeat(40));
    assert.throws(() => treeOfListing("fatal: nope"), /answered "fatal: nope"/);
  });
});
