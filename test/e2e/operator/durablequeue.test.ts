// The durable write queue across a crash: a real operator process with attribution on Redis is
// killed with SIGKILL while a commit window is open, and the next process (as a standby that
// wins the lease would) replays what it had accepted, with each write's author. Without the
// queue the next process's snapshot would commit the open window's values as the operator.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { EventsV1Api } from "@kubernetes/client-node";
import { gitBranches } from "../../../generated/v1alpha3/index.ts";
import { findCondition } from "../../../internal/operator/conditions.ts";
import { RedisServer } from "../../support/redis.ts";
import { ReplicaEnvironment, replicaNamespace as namespace } from "../../support/replicas.ts";
import { eventually } from "../../support/wait.ts";

const names = (prefix: string) => Array.from({ length: 5 }, (_, i) => `${prefix}-${i}`);

/**
 * Objects each user edits, ten rounds each, in the SIGKILL test: `make soak` (SOAK=1) edits fifty
 * each (1,000 edits), `make test` twenty (400), as many windows closing while the process dies.
 */
const objects = process.env.SOAK ? 50 : 20;
const rounds = 10;

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
    await r.targetReady();
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
    // A failure names each commit's author and value, and what each process logged last.
    const history = async (name: string) =>
      `${name}: ${JSON.stringify(await r.valuesOf(r.fileOf(name)))}\n${r.logTails()}`;
    for (const name of names("a"))
      assert.deepEqual(await r.authorsOf(r.fileOf(name)), ["alice"], await history(name));
    for (const name of names("b"))
      assert.deepEqual(await r.authorsOf(r.fileOf(name)), ["bob"], await history(name));
    const bobs = await r.commitsTouching(names("b").map((name) => r.fileOf(name)));
    assert.equal(bobs.length, 1, "bob's window is one commit, made once");
    // Once the replayed writes are pushed, the queue is trimmed.
    await eventually(async () => (await r.queued()).size === 0, {
      timeoutMs: 30_000,
      description: "the durable queue trimmed after the push",
    });
  });

  it("a watch resumed from a cursor stored behind the queue's entries takes each queued event once: the replay's values are not committed again over it", async () => {
    const running = r.replicas.find((replica) => replica.process.running) ?? (await r.startReplica());
    await r.targetReady();
    // Git away: every window is decided and none is pushed, so the queue holds all three edits,
    // each a window of its own (the author changes).
    await r.git.stop();
    const name = "resumed";
    const edits = [
      [r.alice, "v1"],
      [r.bob, "v2"],
      [r.alice, "v3"],
    ] as const;
    for (const [who, value] of edits) await r.write(who, name, value);
    let queued: Awaited<ReturnType<ReplicaEnvironment["queuedEntries"]>> = [];
    await eventually(
      async () => {
        queued = (await r.queuedEntries()).filter((entry) => entry.name === name);
        return queued.map((entry) => entry.value).join() === "v1,v2,v3";
      },
      { timeoutMs: 60_000, description: "the three edits in the durable queue" },
    );
    await running.process.kill();
    // The cursors the process left, moved back before the first queued event: its cursor saves
    // had not reached Redis when it died, so the next watch delivers all three again.
    const first = Number(queued[0]!.resourceVersion);
    assert.ok(first > 1, "a queued entry carries its event's resourceVersion");
    assert.ok((await r.rewindCursors(String(first - 1))) > 0, "the process left resume cursors");
    await r.git.start();
    await r.startReplica();
    await eventually(async () => (await r.show(r.fileOf(name)))?.includes("k: v3") === true, {
      timeoutMs: 90_000,
      description: () => `the last value in Git; last lines:\n${r.logTails()}`,
    });
    // Whatever else the next process commits (its snapshot finds nothing new), the three edits
    // are in Git once each, in order, each its editor's.
    await eventually(async () => (await r.queued()).size === 0, {
      timeoutMs: 30_000,
      description: "the durable queue trimmed after the push",
    });
    assert.deepEqual(
      (await r.valuesOf(r.fileOf(name))).map(({ author, value }) => `${value} ${author}`),
      ["v1 alice", "v2 bob", "v3 alice"],
    );
  });

  it(`${(objects * rounds * 2).toLocaleString("en")} edits by two users, the process killed with SIGKILL while they are queued: every last value reaches Git, every commit is its editor's, and no value is committed twice`, async () => {
    const running = r.replicas.find((replica) => replica.process.running) ?? (await r.startReplica());
    await r.targetReady();
    const mine = Array.from({ length: objects }, (_, i) => `m-${i}`);
    const his = Array.from({ length: objects }, (_, i) => `h-${i}`);
    // alice and bob at once, round after round: windows close on every change of author, so
    // many commits are decided, pushed and trimmed while later ones are still being written.
    const edit = async (who: typeof r.alice, names: string[]) => {
      for (let round = 1; round <= rounds; round++)
        for (const name of names) await r.write(who, name, `v${round}`);
    };
    await Promise.all([edit(r.alice, mine), edit(r.bob, his)]);
    const last = `v${rounds}`;
    // Each user's last edit is accepted: in the queue, or already pushed (a window closed by the
    // other's later writes is decided and pushed meanwhile, and trimmed). The last window stays
    // open (a 60 s idle timeout), so at least one is still only in the queue when the process dies.
    await eventually(
      async () => {
        const values = await r.queued();
        const queued = (names: string[]) => values.get(names.at(-1)!)?.at(-1) === last;
        const accepted = async (names: string[]) =>
          queued(names) || (await r.show(r.fileOf(names.at(-1)!)))?.includes(`k: ${last}`) === true;
        return (queued(mine) || queued(his)) && (await accepted(mine)) && (await accepted(his));
      },
      {
        timeoutMs: 60_000,
        description: "each user's last edit accepted, one still only in the durable queue",
      },
    );
    await running.process.kill();
    await r.startReplica();
    await eventually(
      async () =>
        (await r.showAll([...mine, ...his].map((name) => ({ path: r.fileOf(name) })))).every(
          (content) => content?.includes(`k: ${last}`) === true,
        ),
      { timeoutMs: 120_000, description: () => `every last value in Git; last lines:\n${r.logTails()}` },
    );
    for (const [names, author] of [
      [mine, "alice"],
      [his, "bob"],
    ] as const)
      for (const name of names) {
        const history = await r.valuesOf(r.fileOf(name));
        assert.deepEqual(
          history.map((h) => h.author),
          history.map(() => author),
          `${name}: every commit is ${author}'s`,
        );
        // Oldest first, each value later than the one before it: none committed twice.
        const rounds = history.map((h) => Number(h.value.slice(1)));
        assert.ok(
          rounds.every((n, i) => i === 0 || n > rounds[i - 1]!),
          `${name}: values in order, none twice: ${rounds.join(", ")}`,
        );
        assert.equal(rounds.at(-1), Number(last.slice(1)));
      }
  });

  it("with Redis away the branch says DurableQueueUnavailable and still writes; Redis back, DurableQueue is True again", async () => {
    if (!r.replicas.some((replica) => replica.process.running)) await r.startReplica();
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
    // Both turns are Events on the GitBranch.
    await eventually(
      async () => {
        const reasons = (await r.kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace })).items
          .filter((e) => e.regarding?.kind === "GitBranch" && e.regarding.name === "main")
          .map((e) => `${e.type} ${e.reason}`);
        return (
          reasons.includes("Warning DurableQueueUnavailable") &&
          reasons.includes("Normal DurableQueueRecovered")
        );
      },
      { timeoutMs: 30_000, description: "the GitBranch's DurableQueue Events" },
    );
  });
});
