// Reading many files of a repository in one `git cat-file --batch`, as the scale tests' waits do.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { parseBatch } from "../../support/gitserver.ts";

describe("git cat-file --batch's answers", () => {
  it("are each object's exact bytes in the order asked, and undefined for one that does not exist", () => {
    const dir = mkdtempSync(join(tmpdir(), "gitbatch-"));
    const git = (args: string[], input?: string) =>
      execFileSync("git", args, { cwd: dir, input, env: { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null" } });
    git(["init", "-q", "-b", "main"]);
    writeFileSync(join(dir, "a.yaml"), "k: v1\n");
    writeFileSync(join(dir, "b.yaml"), "two\nlines, and ünïcode\n");
    git(["add", "."]);
    git(["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "files"]);
    const asked = ["main:a.yaml", "main:missing.yaml", "main:b.yaml", "nobranch:a.yaml", "main:a b.yaml"];
    const out = git(["cat-file", "--batch"], asked.map((o) => `${o}\n`).join(""));
    assert.deepEqual(parseBatch(out, asked.length), [
      "k: v1\n",
      undefined,
      "two\nlines, and ünïcode\n",
      undefined,
      undefined,
    ]);
  });
});
