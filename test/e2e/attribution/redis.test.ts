// With --redis-addr: resume cursors in Redis, the redis fact transport, and what Redis going
// away costs. kube-apiserver runs with --min-request-timeout=4, so it ends every watch after 4
// to 8 seconds and each collection reconnects many times within one process.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { gitTargets } from "../../../generated/v1alpha3/index.ts";
import { RedisConnection } from "../../../internal/redis/connection.ts";
import { followerLastSuccess, watchSessions } from "../../../internal/telemetry/instruments.ts";
import { startAttributedMirror, type AttributedMirror } from "../../support/attributedmirror.ts";
import { grantEditing, writeValue } from "../../support/attributionenv.ts";
import type { TestIdentity } from "../../support/controlplane.ts";
import { freePort } from "../../support/ports.ts";
import { RedisServer } from "../../support/redis.ts";
import { eventually } from "../../support/wait.ts";
import { quiet } from "../../support/logger.ts";

const namespace = "team-a";
const folder = "clusters/dev";
const fileOf = (name: string) => `${folder}/${namespace}/configmaps/${name}.yaml`;
const sentinel = "unknown (attribution unresolved) <attribution-unresolved@gitops-reverser.invalid>";

async function sessions(start: string): Promise<number> {
  const { values } = await watchSessions.get();
  return values
    .filter((v) => v.labels.start === start && v.labels.gittarget_name === "configs")
    .reduce((sum, v) => sum + v.value, 0);
}

describe("with --redis-addr: resume cursors and the redis fact transport", () => {
  let mirror: AttributedMirror;
  let alice: TestIdentity;

  /** alice writes `value` into the ConfigMap `name`; resolves to its commit's author once Git has it. */
  const aliceWrites = async (name: string, value: string) => {
    await writeValue(alice.kubeConfig, namespace, name, value);
    await eventually(async () => (await mirror.show(fileOf(name)))?.includes(value), {
      timeoutMs: 60_000,
      description: `${name} at ${value} in Git`,
    });
    return mirror.lastCommit(fileOf(name));
  };

  before(async () => {
    mirror = await startAttributedMirror({
      namespace,
      folder,
      rules: [{ apiGroups: [""], resources: ["configmaps"] }],
      transport: "redis",
      // A fact travels audit webhook batch → Redis XADD → the follower's XREAD before the watch
      // event's grace runs out; on a machine busy with other test files that can take longer
      // than the 3 s default, so this file waits up to 10 s for it (the unresolved case too).
      graceMs: 10_000,
      apiServerArgs: () => Promise.resolve(["--min-request-timeout=4"]),
    });
    alice = await mirror.plane.mintUser("alice");
    await grantEditing(mirror.kc, namespace, [
      { kind: "User", name: "alice", apiGroup: "rbac.authorization.k8s.io" },
    ]);
  });
  after(() => mirror?.stop());

  it("the pod is not ready until Redis answers", async () => {
    const port = await freePort();
    const connection = new RedisConnection(`127.0.0.1:${port}`, quiet);
    const stop = new AbortController();
    const running = connection.start(stop.signal);
    let late: RedisServer | undefined;
    try {
      assert.match(connection.readiness() ?? "", /has not answered yet/);
      late = await RedisServer.start(port);
      await eventually(() => connection.readiness() === undefined, {
        timeoutMs: 30_000,
        description: "readiness once Redis answers",
      });
    } finally {
      stop.abort();
      await running;
      await late?.stop();
    }
  });

  it("a reconnect within a process resumes from the Redis cursor (no second snapshot)", async () => {
    const resumed = await sessions("resume");
    const reinitialized = await sessions("reinitialize");
    await eventually(async () => (await sessions("resume")) >= resumed + 2, {
      timeoutMs: 60_000,
      description: "two reconnects that resumed",
    });
    assert.equal(await sessions("reinitialize"), reinitialized, "no reconnect took a second snapshot");
    assert.equal(await sessions("initial"), 1, "one snapshot, at start");
    const uid = (await gitTargets(mirror.kc).get(namespace, "configs"))?.metadata?.uid;
    const client = mirror.redis!.client();
    try {
      const key = `gitopsreverser:cursor:${uid}|/configmaps|${namespace}|`;
      assert.match(
        (await client.get(key)) ?? "",
        /^\d+$/,
        "the cursor is a resourceVersion, keyed by the target uid",
      );
      assert.ok((await client.pttl(key)) > 0, "with a TTL");
    } finally {
      client.disconnect();
    }
    assert.equal(await aliceWrites("resumed", "v1"), "alice <alice@noreply.cluster.local>");
  });

  it("Redis down does not stop mirroring: it costs the cursors and the author, never the change", async () => {
    const port = mirror.redis!.port;
    const reinitialized = await sessions("reinitialize");
    await mirror.redis!.stop();
    assert.equal(
      await aliceWrites("unrecorded", "v1"),
      sentinel,
      "the fact could not travel: unresolved, not guessed",
    );
    await eventually(async () => (await sessions("reinitialize")) > reinitialized, {
      timeoutMs: 60_000,
      description: "a reconnect without its cursor takes a snapshot",
    });
    assert.equal(
      mirror.operator.redis?.readiness(),
      undefined,
      "answered once: readiness does not flap with Redis",
    );

    const restartedAt = Date.now() / 1000;
    mirror.redis = await RedisServer.start(port);
    await eventually(async () => ((await followerLastSuccess.get()).values[0]?.value ?? 0) > restartedAt, {
      timeoutMs: 30_000,
      description: "the fact follower reading Redis again",
    });
    const resumed = await sessions("resume");
    await eventually(async () => (await sessions("resume")) > resumed, {
      timeoutMs: 60_000,
      description: "reconnects resuming from Redis cursors again",
    });
    // The ingress's Redis connection and kube-apiserver's webhook backend each retry on their
    // own backoff once Redis is back: alice's writes are attributed again once both have.
    let attempt = 0;
    await eventually(
      async () => (await aliceWrites("recorded", `v${++attempt}`)) === "alice <alice@noreply.cluster.local>",
      { timeoutMs: 120_000, description: "alice's writes attributed again once Redis is back" },
    );
  });
});
