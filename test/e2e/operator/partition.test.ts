// A holder cut off from the API server while it can still reach Git: two replicas, one branch,
// the holder's API traffic through a proxy the test cuts (every open connection dropped, every
// new request held, as a partition does). Its Leases go unrenewed, so the other replica takes
// the branch a lease duration after the last renewal it saw; the cut-off holder must have stopped
// writing the branch before that moment, on its own clock, and nothing it held may be lost: the
// durable queue gives it to the new holder.
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { KubeConfig } from "@kubernetes/client-node";
import { gitBranches } from "../../../generated/v1alpha3/index.ts";
import { startApiProxy, type ApiProxy } from "../../support/apiproxy.ts";
import { ReplicaEnvironment, replicaNamespace as namespace, type Replica } from "../../support/replicas.ts";
import { eventually } from "../../support/wait.ts";
import { defaultLeaseTimings } from "../../../internal/operator/leaderelection.ts";

/** The shipped Lease timings (the rule is about them), and how long a takeover may take on a busy machine. */
const takeoverDeadlineMs = defaultLeaseTimings.leaseDurationMs + 30_000;

/** The time of the first line of `file` with `message` (and `shard`, if given). */
function firstLine(file: string, message: string): number | undefined {
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (!line.startsWith("{")) continue;
    const entry = JSON.parse(line) as { message?: string; timestamp?: string };
    if (entry.message === message && entry.timestamp) return Date.parse(entry.timestamp);
  }
  return undefined;
}

describe("a holder cut off from the API server", () => {
  let r: ReplicaEnvironment;
  let proxy: ApiProxy;
  let cut = false;
  let holder: Replica;
  let other: Replica;

  before(async () => {
    r = await ReplicaEnvironment.start();
    const upstream = new KubeConfig();
    upstream.loadFromFile(r.operatorKubeconfigPath);
    // While cut, a request is held for good: it neither lands nor fails, as in a partition.
    proxy = await startApiProxy(
      upstream,
      () => false,
      () => (cut ? new Promise<never>(() => undefined) : undefined),
    );
    const proxied = join(r.dir, "proxied.kubeconfig");
    writeFileSync(proxied, proxy.kubeConfig.exportConfig());
    // The first to start takes the one branch.
    holder = await r.startReplica({
      replicas: 2,
      workers: "workers-a",
      kubeconfigPath: proxied,
      leaseTimings: defaultLeaseTimings,
    });
    await r.targetReady();
    other = await r.startReplica({
      replicas: 2,
      audited: false,
      workers: "workers-b",
      leaseTimings: defaultLeaseTimings,
    });
  });
  after(async () => {
    // The cut-off replica cannot stop gracefully (its API calls hang): it goes first, at once.
    await holder?.process.kill();
    cut = false;
    await r?.stop();
    await proxy?.close();
  });

  const heldBy = async () => (await gitBranches(r.kc).get(namespace, "main"))?.status?.heldBy;

  it("a holder cut off from the API server stops before its Lease can be taken: nothing goes back in Git, nothing is lost", async (t) => {
    await eventually(async () => (await heldBy()) === holder.identity(), {
      timeoutMs: 30_000,
      description: "the first replica holding the branch",
    });
    const file = r.fileOf("partitioned");
    const valueInGit = async () => /k: (\S+)/.exec((await r.show(file)) ?? "")?.[1];
    // The holder takes alice's first value into its window (60 s idle): queued, not yet pushed.
    await r.write(r.alice, "partitioned", "p1");
    await eventually(async () => (await r.queued()).get("partitioned")?.includes("p1") === true, {
      timeoutMs: 30_000,
      description: "p1 in the holder's durable queue",
    });

    cut = true;
    proxy.dropConnections();
    await eventually(async () => (await heldBy()) === other.identity(), {
      timeoutMs: takeoverDeadlineMs,
      description: () => `the other replica to take the branch; last lines:\n${r.logTails()}`,
    });
    // The new holder replays p1 from the durable queue, and bob's edit closes alice's window.
    await r.write(r.bob, "partitioned", "p2");
    await eventually(async () => (await valueInGit()) === "p2", {
      timeoutMs: 90_000,
      description: () => `p2 in Git; last lines:\n${r.logTails()}`,
    });

    // The cut-off holder let the branch go, on its own clock, before the other could take it.
    const took = firstLine(other.logFile, "took a shard");
    const stopped = [
      firstLine(holder.logFile, "lost a shard"),
      firstLine(holder.logFile, "stopped on an error"),
    ].filter((t): t is number => t !== undefined);
    assert.ok(took !== undefined, "the other replica took the branch");
    assert.ok(stopped.length > 0, `the holder says it let go:\n${holder.process.logTail()}`);
    assert.ok(Math.min(...stopped) < took, "the holder stopped before the branch could be taken");
    t.diagnostic(`the holder let go ${took - Math.min(...stopped)} ms before the other took the branch`);

    // Nothing went back, nothing was lost: p1 (replayed, alice's) before bob's p2, each once.
    const history = await r.valuesOf(file);
    assert.deepEqual(
      history.map((h) => `${h.value} ${h.author}`),
      ["p1 alice", "p2 bob"],
    );
  });
});
