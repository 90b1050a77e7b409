import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { BranchWorker } from "../../../../internal/git/worker/branchworker.ts";
import { FakeClone, FakeRemote } from "./fakeremote.ts";
import { configMaps } from "../fixtures.ts";
import { configMapIdentity } from "../../../support/streams.ts";
import { unheardFolders } from "../../../support/worker.ts";
import { quiet } from "../../../support/logger.ts";

const collection = configMaps;
// Timers long enough that only shutdown can close the window.
const target = {
  key: "apps/t",
  path: "f",
  timers: { idleTimeoutMs: 3_600_000, maxDurationMs: 3_600_000 },
  prune: "OnEvent" as const,
};

function worker(clone: FakeClone, errors: string[]) {
  const committer = { name: "a", email: "b" };
  return new BranchWorker({
    clone,
    committer,
    bufferLimitBytes: 1 << 20,
    pushCooldownMs: 0,
    refreshIntervalMs: 3_600_000,
    logger: {
      ...quiet,
      error: (message, meta) => errors.push(`${message} ${JSON.stringify(meta)}`),
    },
    materialize: { committer, additionalSensitive: [], message: () => "m", onRefused: () => undefined },
    folders: unheardFolders,
  });
}

const upsert = {
  type: "upsert" as const,
  collection,
  identity: configMapIdentity("late"),
  object: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "late", namespace: "apps" } },
};

describe("a branch worker's shutdown", () => {
  it("finalizes the open window and publishes everything retained once", async () => {
    const remote = new FakeRemote();
    remote.pushForeign((files) => files.set("f/README.md", "x\n"));
    const clone = new FakeClone(remote);
    const errors: string[] = [];
    const subject = worker(clone, errors);
    subject.start();
    subject.enqueue(target, upsert);
    await subject.stop();
    assert.ok(remote.files().has("f/apps/configmaps/late.yaml"));
    assert.deepEqual(errors, []);
  });

  it("logs what it could not publish when the remote cannot be reached", async () => {
    const remote = new FakeRemote();
    remote.pushForeign((files) => files.set("f/README.md", "x\n"));
    const clone = new FakeClone(remote);
    clone.unreachable = true;
    const errors: string[] = [];
    const subject = worker(clone, errors);
    subject.start();
    subject.enqueue(target, upsert);
    await subject.stop();
    assert.equal(remote.files().has("f/apps/configmaps/late.yaml"), false);
    assert.match(
      errors.join("\n"),
      /shutting down with writes that could not be published .*apps\/t: 1 change/,
    );
  });
});
