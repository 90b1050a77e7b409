// Two replicas and one repository branch: two operator processes on one control plane, Redis and
// Git server. The first to start leads and takes the one branch; the other, with nothing of its
// share to hold, serves the push receiver and takes the branch (and the leader Lease) over when
// the first dies, replaying the durable write queue. shards.test.ts shares thirty branches out.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { gitBranches, gitTargets } from "../../../generated/v1alpha3/index.ts";
import { findCondition } from "../../../internal/operator/conditions.ts";
import { RedisServer } from "../../support/redis.ts";
import {
  postDelivery,
  ReplicaEnvironment,
  replicaNamespace as namespace,
  type Replica,
  replicaLeaseTimings,
} from "../../support/replicas.ts";
import { eventually } from "../../support/wait.ts";
import { genericPush } from "../receiver/payloads.ts";

const names = (prefix: string) => Array.from({ length: 4 }, (_, i) => `${prefix}-${i}`);
/** The operator's Lease duration: a standby takes over this long after the leader's last renewal. */
const { leaseDurationMs } = replicaLeaseTimings;
/** How long a takeover may take here: the lease duration, its retries, and a busy machine. */
const takeoverDeadlineMs = leaseDurationMs + 15_000;
/** The committer, and the author of what no person wrote (a snapshot). */
const operatorName = "GitOps Reverser";

describe("two replicas, one branch: the other takes it over and hears every push notice", () => {
  let r: ReplicaEnvironment;
  let leader: Replica;
  /** The replica that stands by at first, and leads from the second test on. */
  let standby: Replica;

  before(async () => {
    r = await ReplicaEnvironment.start();
    // The first to start leads; the control plane audits to its ingress.
    leader = await r.startReplica({ replicas: 2, receiver: true, workers: "workers-a" });
    await eventually(async () => (await r.leader()) === leader.identity() && leader.identity() !== "", {
      timeoutMs: 60_000,
      description: () => `the first replica to lead; last lines:\n${r.logTails()}`,
    });
    standby = await r.startReplica({ replicas: 2, receiver: true, audited: false, workers: "workers-b" });
    await r.targetReady();
  });
  after(async () => {
    await r?.stop();
  });

  const heldBy = async () => (await gitBranches(r.kc).get(namespace, "main"))?.status?.heldBy;

  it("a push notice posted to the standby wakes the branch's worker on the leader", async () => {
    assert.equal(await heldBy(), leader.identity(), "the GitBranch names the replica that holds it");
    const path = await r.receiver("hook-token");
    const before = (await gitBranches(r.kc).get(namespace, "main"))?.status?.lastPushNoticeAt;
    assert.equal(before, undefined, "no notice yet");
    const url = r.git.repositoryUrl("state");
    const delivery = genericPush("hook-token", url, "main");
    // The standby serves the path too (its paths are registered on every replica), answers 202,
    // and relays the notice through Redis to the replica whose worker holds the branch.
    const looked = r.git.requests.length;
    let status = 0;
    await eventually(
      async () => {
        status = await postDelivery(standby.receiverPort!, path, delivery);
        return status === 202;
      },
      { timeoutMs: 30_000, description: () => `the standby to accept the delivery (last answer ${status})` },
    );
    await eventually(
      async () => (await gitBranches(r.kc).get(namespace, "main"))?.status?.lastPushNoticeAt !== undefined,
      {
        timeoutMs: 30_000,
        description: () => `lastPushNoticeAt, set by the leader; last lines:\n${r.logTails()}`,
      },
    );
    // The notice's look at the remote (a ref advertisement) runs a settle after its receipt and
    // closes the window open then: waited for here, so it cuts no window of the next test.
    await eventually(
      () => r.git.requests.slice(looked).some((q) => q.service === "upload-pack" && q.advertisement),
      {
        timeoutMs: 30_000,
        description: () => `the leader's look at the remote; last lines:\n${r.logTails()}`,
      },
    );
  });

  it("a leader killed with SIGKILL mid-window: the standby takes the Lease within the lease duration and loses no write and no author", async () => {
    assert.deepEqual(await r.openWindows(names("a"), names("b")), [], "none of bob's values in Git yet");

    await leader.process.kill();
    await eventually(async () => (await r.leader()) === standby.identity(), {
      // The standby acquires once it has seen no renewal for the lease duration, on its 2 s
      // retry: the deadline leaves room for a machine busy with other tests.
      timeoutMs: takeoverDeadlineMs,
      description: () => `the standby to take the Lease; last lines:\n${r.logTails()}`,
    });
    // The GitBranch says which replica holds it now.
    await eventually(async () => (await heldBy()) === standby.identity(), {
      timeoutMs: 30_000,
      description: "status.heldBy naming the new leader",
    });

    await eventually(() => r.allAtV2([...names("a"), ...names("b")]), {
      timeoutMs: 90_000,
      description: () => `every last value in Git; last lines:\n${r.logTails()}`,
    });
    for (const name of names("a")) assert.deepEqual(await r.authorsOf(r.fileOf(name)), ["alice"], name);
    for (const name of names("b")) assert.deepEqual(await r.authorsOf(r.fileOf(name)), ["bob"], name);
    assert.equal(
      (await r.commitsTouching(names("b").map((n) => r.fileOf(n)))).length,
      1,
      "bob's window, once",
    );
  });

  it("a rolling restart of every replica loses nothing and makes no commit of its own", async () => {
    // The old leader is gone: a new replica takes the audit port, so the edits below are attributed.
    let current = standby;
    const next = await r.startReplica({ replicas: 2, receiver: true, workers: "workers-c" });
    assert.deepEqual(await r.openWindows(names("r"), names("s")), [], "none of bob's values in Git yet");
    const operatorCommits = await r.commitsBy(operatorName);

    // One replica at a time: the leader stops gracefully (it publishes its open window within its
    // grace and gives the Lease up), the standby leads, and a fresh replica stands by for the next.
    for (const [fresh, workers] of [[next, "workers-d"] as const, [undefined, ""] as const]) {
      await current.process.stop();
      const successor = fresh ?? r.replicas.at(-1)!;
      await eventually(async () => (await r.leader()) === successor.identity(), {
        timeoutMs: takeoverDeadlineMs,
        description: () => `the standby to lead after a graceful stop; last lines:\n${r.logTails()}`,
      });
      current = successor;
      if (workers) await r.startReplica({ replicas: 2, audited: false, workers });
    }

    await eventually(() => r.allAtV2([...names("r"), ...names("s")]), {
      timeoutMs: 60_000,
      description: () => `every last value in Git; last lines:\n${r.logTails()}`,
    });
    for (const name of names("r")) assert.deepEqual(await r.authorsOf(r.fileOf(name)), ["alice"], name);
    for (const name of names("s")) assert.deepEqual(await r.authorsOf(r.fileOf(name)), ["bob"], name);
    assert.equal(await r.commitsBy(operatorName), operatorCommits, "no replica committed as the operator");
    standby = current;
  });

  it("with Redis down a failover still loses no final value (the authors are the unresolved sentinel: the audit facts travel through Redis too)", async () => {
    const leading = standby;
    const successor = await r.startReplica({ replicas: 2, receiver: true, workers: "workers-e" });
    const port = Number(r.redis.address.split(":").at(-1));
    await r.redis.stop();
    try {
      for (const name of names("t")) await r.write(r.alice, name, "v2");
      // Let the leader take them, then kill it before its window closes.
      await eventually(
        async () =>
          findCondition((await gitBranches(r.kc).get(namespace, "main"))?.status?.conditions, "DurableQueue")
            ?.status === "False",
        { timeoutMs: 30_000, description: "the leader's DurableQueue False" },
      );
      await leading.process.kill();
      await eventually(async () => (await r.leader()) === successor.identity(), {
        timeoutMs: takeoverDeadlineMs,
        description: () => `the standby to take the Lease; last lines:\n${r.logTails()}`,
      });
      await eventually(() => r.allAtV2(names("t")), {
        timeoutMs: 90_000,
        description: () => `every last value in Git; last lines:\n${r.logTails()}`,
      });
    } finally {
      r.redis = await RedisServer.start(port);
    }
  });

  it("a holder frozen past its Lease pushes nothing after it wakes: no value in Git goes back, nothing is lost", async () => {
    const holding = await eventually(
      async () => {
        const identity = await heldBy();
        return r.replicas.find((p) => p.process.running && p.identity() === identity);
      },
      { timeoutMs: 30_000, description: "the replica holding the branch" },
    );
    // A replica to take the branch over (there may be another already).
    await r.startReplica({ replicas: 2, receiver: true, audited: false, workers: "workers-f" });
    // Windows close 15 s after their last write, whoever the authors are: the frozen holder's is
    // still open when it stops, and the new holder's closes soon after.
    const target = (await gitTargets(r.kc).get(namespace, "configs"))!;
    await gitTargets(r.kc).jsonPatch(target, [
      { op: "replace", path: "/spec/commit/window/idleTimeout", value: "15s" },
    ]);
    await eventually(
      async () => {
        const t = await gitTargets(r.kc).get(namespace, "configs");
        return t?.status?.observedGeneration === t?.metadata.generation;
      },
      { timeoutMs: 30_000, description: "the GitTarget observed its new window" },
    );
    const file = r.fileOf("frozen");
    const valueInGit = async () => /k: (\S+)/.exec((await r.showAll([{ path: file }]))[0] ?? "")?.[1];
    // The holder takes alice's first value into its open window.
    await r.write(r.alice, "frozen", "f1");
    await eventually(async () => (await r.queued()).get("frozen")?.includes("f1") === true, {
      timeoutMs: 30_000,
      description: "f1 in the holder's durable queue",
    });
    process.kill(holding.process.pid, "SIGSTOP");
    try {
      await eventually(
        async () => {
          const identity = await heldBy();
          return identity !== undefined && identity !== holding.identity();
        },
        {
          timeoutMs: takeoverDeadlineMs + 15_000,
          description: () => `another replica to take the branch; last lines:\n${r.logTails()}`,
        },
      );
      // The new holder replays f1 from the durable queue, then pushes alice's newer value.
      await r.write(r.alice, "frozen", "f2");
      await eventually(async () => (await valueInGit()) === "f2", {
        timeoutMs: 60_000,
        description: () => `f2 in Git; last lines:\n${r.logTails()}`,
      });
    } finally {
      process.kill(holding.process.pid, "SIGCONT");
    }
    // Awake, the old holder finds its Lease long unrenewed: it publishes nothing, and says so
    // (without the fence it replays f1 onto the new tip and pushes it: Git goes back), or it
    // finds its leader Lease lost first and stops, which ends its chance to push just as well.
    await eventually(
      async () =>
        readFileSync(holding.logFile, "utf8").includes("this replica may not push") ||
        !holding.process.running ||
        (await valueInGit()) === "f1",
      {
        timeoutMs: 60_000,
        description: () => `the woken replica's last lines:\n${holding.process.logTail()}`,
      },
    );
    assert.equal(await valueInGit(), "f2", "no value in Git goes back");
    // f1 may have been committed before f2 (the durable queue replayed), never after it.
    const history = (await r.valuesOf(file)).map((h) => h.value);
    assert.equal(history.at(-1), "f2", JSON.stringify(history));
    assert.deepEqual(
      history.filter((v) => v === "f2"),
      ["f2"],
      `f2 committed once: ${JSON.stringify(history)}`,
    );
    assert.ok(
      history.lastIndexOf("f1") < history.indexOf("f2"),
      `no f1 after f2: ${JSON.stringify(history)}`,
    );
  });
});
