// Three replicas share the repository's branches out (the team's main and twelve more, each with
// a GitTarget of its own; thirty more in `make soak`): each holds its share on Leases, runs those branches' workers and
// watches, and takes over a dead replica's branches, replaying their durable write queues. Three
// operator processes on one control plane, one Redis and one Git server.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CoordinationV1Api } from "@kubernetes/client-node";
import { gitBranches, gitTargets } from "../../../generated/v1alpha3/index.ts";
import { leaseKindLabel, shardAnnotation } from "../../../internal/operator/shardleases.ts";
import { findCondition } from "../../../internal/operator/conditions.ts";
import { RedisServer } from "../../support/redis.ts";
import {
  postDelivery,
  ReplicaEnvironment,
  replicaNamespace as namespace,
  shardNames,
  type Replica,
  replicaLeaseTimings,
} from "../../support/replicas.ts";
import { operatorNamespace } from "../../support/shippedrbac.ts";
import { eventually } from "../../support/wait.ts";
import { genericPush } from "../receiver/payloads.ts";

/**
 * The branches beside the team's main: enough that every replica holds several and a takeover
 * moves several at once. `make soak` (SOAK=1) runs thirty, where `make test` runs twelve: on a
 * loaded 2-core machine thirty branches on three processes beside three other test files made
 * the rolling restart run past its five-minute timeout.
 */
const branchCount = process.env.SOAK ? 30 : 12;
/** The share each of three replicas holds once settled: within one of a third of every branch. */
const shareRange = [Math.floor((branchCount + 1) / 3) - 1, Math.ceil((branchCount + 1) / 3)] as const;
/** The ConfigMap each user edits in every branch's namespace. */
const editors = [
  ["from-alice", "alice"],
  ["from-bob", "bob"],
] as const;
const shards = Array.from({ length: branchCount }, (_, i) => i);
/** The operator's Lease duration: a dead replica's branches are taken this long after its last renewal. */
const { leaseDurationMs } = replicaLeaseTimings;
/**
 * Rounds of edits around the SIGKILL: every branch has windows open when it comes, and edits follow
 * it; `make soak` (SOAK=1) runs seventeen, 1,020 edits, where `make test` runs five.
 */
const killRounds = process.env.SOAK ? 17 : 5;
/** The committer, and the author of what no person wrote (a snapshot). */
const operatorName = "GitOps Reverser";

describe(`three replicas share ${branchCount + 1} branches out`, () => {
  let r: ReplicaEnvironment;

  /** The holder of every repository branch's Lease, by GitBranch name. */
  async function holders(): Promise<Map<string, string>> {
    const leases = await r.kc
      .makeApiClient(CoordinationV1Api)
      .listNamespacedLease({ namespace: operatorNamespace, labelSelector: `${leaseKindLabel}=shard` });
    const byShard = new Map(
      leases.items.map((l) => [l.metadata!.annotations![shardAnnotation]!, l.spec?.holderIdentity ?? ""]),
    );
    const byBranch = new Map<string, string>();
    for (const b of (await gitBranches(r.kc).list(namespace)).items) {
      const holder = byShard.get(`${b.status?.repository}#${b.spec.branch}`);
      if (holder) byBranch.set(b.metadata.name!, holder);
    }
    return byBranch;
  }

  /** How many branches each live replica holds. */
  async function shares(replicas: Replica[]): Promise<number[]> {
    const held = [...(await holders()).values()];
    return replicas.map((p) => held.filter((h) => h === p.identity()).length);
  }

  /** alice and bob each write `value` into a ConfigMap of their own in every branch's namespace. */
  const writeRound = (value: string) =>
    Promise.all(
      shards.map(async (i) => {
        await r.writeIn(i, r.alice, "from-alice", value);
        await r.writeIn(i, r.bob, "from-bob", value);
      }),
    );

  /**
   * Resolves once every branch's worker took `value` of both files, with its author: in its
   * durable queue, or already pushed. Before that, the facts that name the authors may still be
   * on their way to the audited replica.
   */
  const taken = (value: string) =>
    eventually(
      async () => {
        const files = shards.flatMap((i) => editors.map(([name]) => r.shardFile(i, name)));
        const contents = await r.showAll(files);
        for (const [n, i] of shards.entries()) {
          const { branch } = shardNames(i);
          const queued = await r.queuedEntries(branch);
          for (const [e, [name, editor]] of editors.entries()) {
            if (queued.some((q) => q.name === name && q.value === value && q.author === editor)) continue;
            if (!contents[n * editors.length + e]?.includes(`k: ${value}`)) return false;
          }
        }
        return true;
      },
      { timeoutMs: 60_000, description: () => `every branch's worker to take ${value} with its author` },
    );

  /** Resolves once every branch holds `value` in both files. */
  const allAt = (value: string) =>
    eventually(
      async () => {
        const files = shards.flatMap((i) => editors.map(([name]) => r.shardFile(i, name)));
        return (await r.showAll(files)).every((content) => content?.includes(`k: ${value}`) === true);
      },
      { timeoutMs: 120_000, description: () => `every branch at ${value}; last lines:\n${r.logTails()}` },
    );

  /** Every commit of each file is its editor's, and its values only rise: none twice, none out of order. */
  async function authoredInOrder(rank: (value: string) => number, prefix = "v"): Promise<void> {
    for (const i of shards) {
      for (const [name, editor] of editors) {
        const { path, branch } = r.shardFile(i, name);
        // Only this test's values: an earlier test's history is that test's to judge.
        const history = (await r.valuesOf(path, branch)).filter((h) => h.value.startsWith(prefix));
        const values = history.map((h) => rank(h.value));
        assert.deepEqual(
          values,
          [...new Set(values)].sort((a, b) => a - b),
          `${branch} ${name}: no value committed twice or out of order (${JSON.stringify(history)})`,
        );
        assert.deepEqual(
          [...new Set(history.map((h) => h.author))],
          [editor],
          `${branch} ${name}: every commit is its editor's (${JSON.stringify(history)})`,
        );
      }
    }
  }

  /** Resolves once the live replicas hold every branch, each its share. */
  async function settled(live: Replica[]): Promise<void> {
    let last: number[] = [];
    await eventually(
      async () => {
        last = await shares(live);
        const share = Math.ceil((branchCount + 1) / live.length);
        return (
          last.reduce((a, b) => a + b, 0) === branchCount + 1 &&
          last.every((n) => n >= share - 2 && n <= share)
        );
      },
      {
        timeoutMs: 60_000,
        description: () => `the live replicas' shares, held ${last.join("/")}:\n${r.logTails()}`,
      },
    );
  }

  const operatorCommits = () =>
    Promise.all(shards.map((i) => r.commitsBy(operatorName, shardNames(i).branch)));

  const targetsReady = async () => {
    const targets = (await gitTargets(r.kc).list(namespace)).items;
    return (
      targets.length === branchCount + 1 &&
      targets.every((t) => t.status?.conditions?.find((c) => c.type === "Ready")?.status === "True")
    );
  };

  before(async () => {
    r = await ReplicaEnvironment.start();
    await r.addBranches(branchCount);
    // The first serves the audit ingress; each has a worker root of its own, as a pod does.
    for (const [i, workers] of ["workers-a", "workers-b", "workers-c"].entries())
      await r.startReplica({ replicas: 3, receiver: true, audited: i === 0, workers });
  });
  after(async () => {
    await r?.stop();
  });

  it(`${branchCount + 1} branches are shared out by three replicas (each holds ${shareRange.join("–")}; the Leases and GitBranch status say which)`, async () => {
    let last: number[] = [];
    await eventually(
      async () => {
        last = await shares(r.replicas);
        return (
          last.reduce((a, b) => a + b, 0) === branchCount + 1 &&
          last.every((n) => n >= shareRange[0] && n <= shareRange[1])
        );
      },
      {
        timeoutMs: 90_000,
        description: () => `shares of ${shareRange.join("–")}, held ${last.join("/")}:\n${r.logTails()}`,
      },
    );
    await eventually(targetsReady, {
      timeoutMs: 120_000,
      description: () => `every GitTarget Ready; last lines:\n${r.logTails()}`,
    });
    // Against the Leases as they are at each look: a shard may still move once the shares are
    // within range (one at the range's low end is under the floor, and one over it gives a shard back).
    await eventually(
      async () => {
        const byBranch = await holders();
        for (const b of (await gitBranches(r.kc).list(namespace)).items)
          if (b.status?.heldBy !== byBranch.get(b.metadata.name!)) return false;
        return true;
      },
      { timeoutMs: 30_000, description: "every GitBranch's status.heldBy naming its Lease's holder" },
    );
  });

  it("a push notice posted to any replica wakes the holder", async () => {
    const path = await r.receiver("hook-token");
    const byBranch = await holders();
    const url = r.git.repositoryUrl("state");
    // Each replica in turn is posted a notice for a branch another replica holds, a branch of its
    // own each: a GitBranch writes the notices of one minute once.
    const noticed = new Set<string>();
    for (const [i, replica] of r.replicas.entries()) {
      const branch = [...byBranch].find(
        ([name, holder]) => name.startsWith("b-") && holder !== replica.identity() && !noticed.has(name),
      );
      assert.ok(branch, `a branch replica ${i} does not hold`);
      const [name] = branch;
      noticed.add(name);
      const before = (await gitBranches(r.kc).get(namespace, name))?.status?.lastPushNoticeAt;
      // Posted again until its holder writes it: a notice relayed while the branch's new holder
      // still starts its worker finds none, and is lost as the relay documents.
      let status = 0;
      await eventually(
        async () => {
          status = await postDelivery(replica.receiverPort!, path, genericPush("hook-token", url, name));
          const noticed = (await gitBranches(r.kc).get(namespace, name))?.status?.lastPushNoticeAt;
          return status === 202 && noticed !== before;
        },
        {
          timeoutMs: 30_000,
          description: () =>
            `${name}'s lastPushNoticeAt, set by its holder (replica ${i} answered ${status})`,
        },
      );
    }
  });

  it(`a replica killed with SIGKILL mid-window loses no write and no author: ${killRounds * branchCount * editors.length} edits by two users across the branches`, async () => {
    const rounds = killRounds;
    const killAfter = Math.ceil(rounds / 2);
    const before = await operatorCommits();
    const victim = r.replicas[1]!;
    const survivors = r.replicas.filter((p) => p !== victim);
    const victims = [...(await holders())].filter(([, h]) => h === victim.identity()).map(([name]) => name);
    assert.ok(victims.length >= shareRange[0], `the victim holds its share (${victims.length})`);
    let killedAt = 0;
    // Its branches are taken over within the lease duration (plus a busy machine), watched from
    // the kill on, while the rounds after it are written: the takeover's time, not the writes'.
    let takenOver: Promise<number> | undefined;
    for (let round = 1; round <= rounds; round++) {
      await writeRound(`v${round}`);
      if (round === killAfter) {
        await victim.process.kill();
        killedAt = Date.now();
        takenOver = eventually(
          async () => {
            const byBranch = await holders();
            const taken = victims.every((name) => survivors.some((p) => p.identity() === byBranch.get(name)));
            return taken && Date.now();
          },
          {
            timeoutMs: leaseDurationMs + 15_000,
            description: () => `the victim's branches taken over:\n${r.logTails()}`,
          },
        );
        // Awaited below; a rejection meanwhile is not unhandled.
        takenOver.catch(() => undefined);
      }
    }
    const takenAfterMs = (await takenOver!) - killedAt;
    await allAt(`v${rounds}`);
    await authoredInOrder((value) => Number(value.slice(1)));
    assert.deepEqual(await operatorCommits(), before, "no replica committed as the operator");
    assert.ok(takenAfterMs < leaseDurationMs + 15_000, `taken over ${takenAfterMs} ms after the kill`);
  });

  it("a rolling restart of all three replicas loses nothing and makes no commit of its own", async () => {
    // The killed replica's place is taken first, as its Deployment would; then each old replica
    // in turn is replaced: the new pod starts, the old one stops gracefully and hands its branches
    // over (its watches stop, its workers publish, then its Leases go). Each step finds windows
    // open in every branch. The first replica serves the audit port, so its successor takes it.
    let live = r.replicas.filter((p) => p.process.running);
    live.push(await r.startReplica({ replicas: 3, receiver: true, audited: false, workers: "workers-d" }));
    await settled(live);
    const before = await operatorCommits();
    const fresh = ["workers-e", "workers-f", "workers-g"];
    // Each round is written just before the old replica stops, so its windows are open then.
    const writeStep = async (step: number) => {
      await writeRound(`r${step + 1}`);
      await taken(`r${step + 1}`);
    };
    for (const [step, workers] of fresh.entries()) {
      const old = live[0]!;
      const audited = old === r.replicas[0];
      let next: Replica;
      if (audited) {
        await writeStep(step);
        await old.process.stop(30_000);
        next = await r.startReplica({ replicas: 3, receiver: true, audited, workers });
        await r.auditFlowing(`probe-${step}`);
      } else {
        next = await r.startReplica({ replicas: 3, receiver: true, audited, workers });
        await writeStep(step);
        await old.process.stop(30_000);
      }
      live = [...live.slice(1), next];
      await settled(live);
    }
    await writeRound("r4");
    await allAt("r4");
    await authoredInOrder((value) => Number(value.slice(1)), "r");
    assert.deepEqual(await operatorCommits(), before, "no replica committed as the operator");
  });

  it("with Redis down a failover still loses no final value (the authors are the unresolved sentinel: the audit facts travel through Redis too)", async () => {
    const live = r.replicas.filter((p) => p.process.running);
    const victim = live[1]!;
    const victims = [...(await holders())].filter(([, h]) => h === victim.identity()).map(([name]) => name);
    const port = Number(r.redis.address.split(":").at(-1));
    await r.redis.stop();
    try {
      await writeRound("t1");
      // The victim took the round into memory: its branches say the queue is away once an
      // append failed (a branch that moved to another replica meanwhile may have it in Git).
      await eventually(
        async () => {
          const branches = (await gitBranches(r.kc).list(namespace)).items;
          for (const name of victims) {
            const conditions = branches.find((b) => b.metadata.name === name)?.status?.conditions;
            if (findCondition(conditions, "DurableQueue")?.status === "False") continue;
            const i = shards.find((n) => shardNames(n).branch === name);
            if (i === undefined) continue;
            const { path, branch } = r.shardFile(i, "from-alice");
            if (!(await r.show(path, branch))?.includes("k: t1")) return false;
          }
          return true;
        },
        { timeoutMs: 30_000, description: "the victim's branches DurableQueue False" },
      );
      await victim.process.kill();
      await allAt("t1");
    } finally {
      r.redis = await RedisServer.start(port);
    }
  });
});
