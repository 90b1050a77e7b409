import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { WorkerManager } from "../../../internal/git/workermanager.ts";

const root = mkdtempSync(join(tmpdir(), "workermanager-test-"));
const quiet = { info: () => undefined, error: () => undefined };

describe("the worker manager's sweep", () => {
  after(() => rmSync(root, { recursive: true, force: true }));

  it("removes every clone directory no live worker uses, and keeps the ones in use", async () => {
    for (const uid of ["in-use", "left-by-a-deleted-gitbranch"])
      mkdirSync(join(root, uid, ".git"), { recursive: true });
    const workers = new WorkerManager({
      root,
      bufferLimitBytes: 1024,
      additionalSensitive: [],
      onRefused: () => undefined,
      logger: quiet,
    });
    await workers.ensure({
      key: "team-a/main",
      uid: "in-use",
      url: "http://127.0.0.1:1/repo.git",
      branch: "main",
      auth: undefined,
      committer: { name: "GitOps Reverser", email: "noreply@configbutler.ai" },
      identity: "provider-uid|url|1",
    });
    await workers.sweep();
    assert.equal(existsSync(join(root, "in-use")), true);
    assert.equal(existsSync(join(root, "left-by-a-deleted-gitbranch")), false);

    await workers.release("team-a/main");
    assert.equal(existsSync(join(root, "in-use")), false, "a released worker takes its clone with it");
  });
});
