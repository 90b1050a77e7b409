// The durable write queue across a crash: a real operator process with attribution on Redis is
// killed with SIGKILL while a commit window is open, and the next process (as a standby that
// wins the lease would) replays what it had accepted, with each write's author. Without the
// queue the next process's snapshot would commit the open window's values as the operator.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { gitBranches, gitTargets } from "../../../generated/v1alpha3/index.ts";
import { findCondition } from "../../../internal/operator/conditions.ts";
import { RedisServer } from "../../support/redis.ts";
import { ReplicaEnvironment, replicaNamespace as namespace } from "../../support/replicas.ts";
import { eventually } from "../../support/wait.ts";

const names = (prefix: string) => Array.from({ length: 5 }, (_, i) => `${prefix}-${i}`);

describe("the durable write queue: an operator process killed mid-window", () => {
  let r: ReplicaEnvironment;

  before(async () => {
    r = await ReplicaEnvironment.start();
  });
  after(async () => {
    await r?.stop();
  });

  const branchCondition = async (type: string) =>
    findCondition((await gitBranches(r.kc).get(namespace, "main"))?.status?.conditions, type);

  it("an operator process killed with SIGKILL mid-window loses no write and no author: the next process replays the queue before its snapshot", async () => {
    const first = await r.startReplica();
    await eventually(
      async () => {
        first.process.assertRunning();
        const target = await gitTargets(r.kc).get(namespace, "configs");
        return findCondition(target?.status?.conditions, "Ready")?.status === "True";
      },
      { timeoutMs: 90_000, description: () => `the GitTarget configs Ready; last lines:\n${r.logTails()}` },
    );
    // The branch reports its queue: DurableQueue=True while Redis takes every append.
    await eventually(async () => (await branchCondition("DurableQueue"))?.status === "True", {
      timeoutMs: 30_000,
      description: "the GitBranch's DurableQueue True",
    });

    // alice's window is closed by bob's first write, and bob's is open: mid-window.
    assert.deepEqual(await r.openWindows(names("a"), names("b")), [], "none of bob's values in Git yet");

    await first.process.kill();
    assert.ok((await r.queued()).size > 0, "the queue outlives the process");

    await r.startReplica();
    await eventually(() => r.allAtV2([...names("a"), ...names("b")]), {
      timeoutMs: 90_000,
      description: () => `every last value in Git; last lines:\n${r.logTails()}`,
    });
    // Every commit of alice's files is hers and every commit of bob's is his: one window each,
    // replayed as one commit, and the snapshot after the replay committed nothing over them.
    for (const name of names("a")) assert.deepEqual(await r.authorsOf(r.fileOf(name)), ["alice"], name);
    for (const name of names("b")) assert.deepEqual(await r.authorsOf(r.fileOf(name)), ["bob"], name);
    const bobs = await r.commitsTouching(names("b").map((name) => r.fileOf(name)));
    assert.equal(bobs.length, 1, "bob's window is one commit, made once");
    // Once the replayed writes are pushed, the queue is trimmed.
    await eventually(async () => (await r.queued()).size === 0, {
      timeoutMs: 30_000,
      description: "the durable queue trimmed after the push",
    });
  });

  it("with Redis away the branch says DurableQueueUnavailable and still writes; Redis back, DurableQueue is True again", async () => {
    assert.equal(r.replicas.length, 2, "the process of the test before runs on");
    await r.redis.stop();
    await r.write(r.alice, "c-0", "v1");
    await eventually(
      async () => {
        const queue = await branchCondition("DurableQueue");
        return queue?.status === "False" && queue.reason === "DurableQueueUnavailable";
      },
      { timeoutMs: 30_000, description: "DurableQueue False, DurableQueueUnavailable" },
    );
    // Redis away is no failure of the branch: the write goes on from memory.
    assert.equal((await branchCondition("Ready"))?.status, "True");
    r.redis = await RedisServer.start(Number(r.redis.address.split(":").at(-1)));
    await r.write(r.bob, "c-1", "v1"); // another author closes alice's window
    await eventually(async () => (await r.show(r.fileOf("c-0")))?.includes("k: v1") ?? false, {
      timeoutMs: 60_000,
      description: "c-0 in Git",
    });
    // Its author may be the sentinel: with Redis away the audit facts did not travel either.
    await eventually(async () => (await branchCondition("DurableQueue"))?.status === "True", {
      timeoutMs: 30_000,
      description: "DurableQueue True again",
    });
  });
});
