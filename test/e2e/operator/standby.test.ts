// More than one replica: two operator processes on one control plane, Redis and Git server,
// electing a leader on the Lease. The leader holds the branch; the standby serves the push
// receiver and takes over when the leader dies, replaying the durable write queue.
import assert from "node:assert/strict";
import { request } from "node:http";
import { after, before, describe, it } from "node:test";
import { CoreV1Api } from "@kubernetes/client-node";
import { gitBranches, gitReceivers, gitTargets } from "../../../generated/v1alpha3/index.ts";
import { findCondition } from "../../../internal/operator/conditions.ts";
import { mirrorFieldManager } from "../../support/mirror.ts";
import { ReplicaEnvironment, replicaNamespace as namespace, type Replica } from "../../support/replicas.ts";
import { eventually } from "../../support/wait.ts";
import { genericPush } from "../receiver/payloads.ts";

const names = (prefix: string) => Array.from({ length: 4 }, (_, i) => `${prefix}-${i}`);
/** The operator's Lease duration: a standby takes over this long after the leader's last renewal. */
const leaseDurationMs = 15_000;

describe("replicas: one leader holds the branches, a standby takes over and hears every push notice", () => {
  let r: ReplicaEnvironment;
  let leader: Replica;
  let standby: Replica;

  before(async () => {
    r = await ReplicaEnvironment.start();
    // The first to start leads; the control plane audits to its ingress.
    leader = await r.startReplica({ standby: true, receiver: true, workers: "workers-a" });
    await eventually(async () => (await r.leader()) === leader.identity() && leader.identity() !== "", {
      timeoutMs: 60_000,
      description: () => `the first replica to lead; last lines:\n${r.logTails()}`,
    });
    standby = await r.startReplica({ standby: true, receiver: true, audited: false, workers: "workers-b" });
    await eventually(
      async () => {
        const target = await gitTargets(r.kc).get(namespace, "configs");
        return findCondition(target?.status?.conditions, "Ready")?.status === "True";
      },
      { timeoutMs: 90_000, description: () => `the GitTarget configs Ready; last lines:\n${r.logTails()}` },
    );
  });
  after(async () => {
    await r?.stop();
  });

  it("a push notice posted to the standby wakes the branch's worker on the leader", async () => {
    await r.kc.makeApiClient(CoreV1Api).createNamespacedSecret({
      namespace,
      body: { metadata: { name: "hook" }, stringData: { token: "hook-token" } },
    });
    await gitReceivers(r.kc).apply(
      {
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "GitReceiver",
        metadata: { name: "hook", namespace },
        spec: { type: "generic-hmac", secretRef: { name: "hook" } },
      },
      mirrorFieldManager,
    );
    let path = "";
    await eventually(
      async () => {
        path = (await gitReceivers(r.kc).get(namespace, "hook"))?.status?.webhookPath ?? "";
        return path !== "";
      },
      { timeoutMs: 30_000, description: "the GitReceiver's webhookPath, written by the leader" },
    );
    const before = (await gitBranches(r.kc).get(namespace, "main"))?.status?.lastPushNoticeAt;
    assert.equal(before, undefined, "no notice yet");
    const url = r.git.repositoryUrl("state");
    const delivery = genericPush("hook-token", url, "main");
    // The standby serves the path too (its paths are registered on every replica), answers 202,
    // and relays the notice through Redis to the replica whose worker holds the branch.
    let status = 0;
    await eventually(
      async () => {
        status = await post(standby.receiverPort!, path, delivery);
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
  });

  it("a leader killed with SIGKILL mid-window: the standby takes the Lease within the lease duration and loses no write and no author", async () => {
    assert.deepEqual(await r.openWindows(names("a"), names("b")), [], "none of bob's values in Git yet");

    await leader.process.kill();
    const killedAt = Date.now();
    await eventually(async () => (await r.leader()) === standby.identity(), {
      // The standby acquires once it has seen no renewal for the lease duration, on its 2 s retry.
      timeoutMs: leaseDurationMs + 5_000,
      description: () => `the standby to take the Lease; last lines:\n${r.logTails()}`,
    });
    const takeoverMs = Date.now() - killedAt;
    assert.ok(takeoverMs <= leaseDurationMs + 5_000, `taken over in ${takeoverMs} ms`);

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
});

/** Posts a delivery to a receiver on loopback; resolves to the status code. */
function post(port: number, path: string, delivery: { body: string; headers: Record<string, string> }) {
  return new Promise<number>((resolve, reject) => {
    const headers = { ...delivery.headers, "content-length": String(Buffer.byteLength(delivery.body)) };
    const req = request({ host: "127.0.0.1", port, path, method: "POST", headers }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
    req.end(delivery.body);
  });
}
