// The durable write queue across a crash: a real operator process with attribution on Redis is
// killed with SIGKILL while a commit window is open, and the next process (as a standby that
// wins the lease would) replays what it had accepted, with each write's author. Without the
// queue the next process's snapshot would commit the open window's values as the operator.
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { gitBranches, gitTargets } from "../../../generated/v1alpha3/index.ts";
import { RedisConnection } from "../../../internal/redis/connection.ts";
import { writeLogKey } from "../../../internal/redis/writelog.ts";
import { attributionEnv, grantEditing, type AttributionEnv } from "../../support/attributionenv.ts";
import { ControlPlane, type TestIdentity } from "../../support/controlplane.ts";
import { GitServer } from "../../support/gitserver.ts";
import { quiet } from "../../support/logger.ts";
import { installCrds } from "../../support/manifests.ts";
import { applyMirror } from "../../support/mirror.ts";
import { startOperatorProcess, type OperatorProcess } from "../../support/operator.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";
import { RedisServer } from "../../support/redis.ts";
import { eventually } from "../../support/wait.ts";
import { findCondition } from "../../../internal/operator/conditions.ts";

const namespace = "team-q";
const folder = "clusters/dev";
const user = { username: "gitops", password: "s3cret" };
const fileOf = (name: string) => `${folder}/${namespace}/configmaps/${name}.yaml`;
const names = (prefix: string) => Array.from({ length: 5 }, (_, i) => `${prefix}-${i}`);

describe("the durable write queue: an operator process killed mid-window", () => {
  let dir: string;
  let env: AttributionEnv;
  let plane: ControlPlane;
  let git: GitServer;
  let redis: RedisServer;
  let kc: KubeConfig;
  let alice: TestIdentity;
  let bob: TestIdentity;
  let operator: OperatorProcess | undefined;
  const queue = new AbortController();
  let connection: RedisConnection;

  const show = (path: string) => git.gitIn("state", ["show", `main:${path}`]).catch(() => undefined);
  const authorsOf = async (path: string) =>
    (await git.gitIn("state", ["log", "--format=%an", "main", "--", path])).split("\n").filter(Boolean);

  /** An operator process with attribution on the redis transport, as a replica would run. */
  async function startProcess(): Promise<OperatorProcess> {
    const logDir = makeOwnedTempDir("durable-log");
    const certs = join(dir, "audit-certs");
    const started = await startOperatorProcess(plane.kubeconfigPath, logDir, [
      "--author-attribution=true",
      "--author-attribution-transport=redis",
      "--author-attribution-grace=10s",
      `--redis-addr=${redis.address}`,
      `--audit-bind-address=127.0.0.1:${env.port}`,
      `--audit-cert-dir=${certs}`,
      `--in-cluster-kube-providers=${namespace}/self`,
      `--worker-root=${join(dir, "workers")}`,
      "--metrics-secure=false",
    ]);
    operator = started;
    return started;
  }

  /** Writes `value` into the ConfigMap `name` as `who`. */
  async function write(who: TestIdentity, name: string, value: string): Promise<void> {
    const core = who.kubeConfig.makeApiClient(CoreV1Api);
    await core
      .createNamespacedConfigMap({ namespace, body: { metadata: { name }, data: { k: value } } })
      .catch(() =>
        core.patchNamespacedConfigMap({ namespace, name, body: [{ op: "replace", path: "/data/k", value }] }),
      );
  }

  /** The values the branch's durable queue holds, by ConfigMap name: every entry's, in order. */
  async function queued(): Promise<Map<string, string[]>> {
    const entries = await connection.client.xrange(writeLogKey(`${namespace}/main`), "-", "+");
    const values = new Map<string, string[]>();
    for (const [, fields] of entries) {
      const { item } = JSON.parse(fields[1]!) as {
        item: { identity: { name: string }; object?: { data?: { k?: string } } };
      };
      values.set(item.identity.name, [...(values.get(item.identity.name) ?? []), item.object?.data?.k ?? ""]);
    }
    return values;
  }

  before(async () => {
    dir = makeOwnedTempDir("durable-queue");
    env = await attributionEnv(dir);
    const certs = join(dir, "audit-certs");
    mkdirSync(certs);
    const { tls } = env.settings().ingress;
    writeFileSync(join(certs, "tls.crt"), tls!.cert);
    writeFileSync(join(certs, "tls.key"), tls!.key);
    writeFileSync(join(certs, "ca.crt"), tls!.ca);
    [plane, git, redis] = await Promise.all([
      ControlPlane.start({ audit: env.webhook(`${namespace}.self`) }),
      GitServer.start({ users: [user] }),
      RedisServer.start(),
    ]);
    connection = new RedisConnection(redis.address, quiet);
    void connection.start(queue.signal);
    kc = plane.kubeConfig();
    await installCrds(kc);
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
    const url = await git.createRepository("state");
    // A long idle timeout: the window bob writes into is still open when the process dies.
    await applyMirror(kc, namespace, url, user, [
      {
        name: "configs",
        path: folder,
        rules: [{ apiGroups: [""], resources: ["configmaps"] }],
        idleTimeout: "60s",
        maxDuration: "5m",
      },
    ]);
    [alice, bob] = [await plane.mintUser("alice"), await plane.mintUser("bob")];
    await grantEditing(kc, namespace, [
      { kind: "User", name: "alice", apiGroup: "rbac.authorization.k8s.io" },
      { kind: "User", name: "bob", apiGroup: "rbac.authorization.k8s.io" },
    ]);
  });
  after(async () => {
    await operator?.process.stop();
    queue.abort();
    await git?.close();
    await plane?.stop();
    await redis?.stop();
    removeOwnedTempDir(dir);
  });

  const targetReady = (description: string) =>
    eventually(
      async () => {
        operator?.process.assertRunning();
        const target = await gitTargets(kc).get(namespace, "configs");
        return findCondition(target?.status?.conditions, "Ready")?.status === "True";
      },
      { timeoutMs: 90_000, description: () => `${description}; last lines:\n${operator?.process.logTail()}` },
    );

  it("an operator process killed with SIGKILL mid-window loses no write and no author: the next process replays the queue before its snapshot", async () => {
    await startProcess();
    await targetReady("the GitTarget configs Ready under the first process");
    // The branch reports its queue: DurableQueue=True while Redis takes every append.
    await eventually(
      async () =>
        findCondition((await gitBranches(kc).get(namespace, "main"))?.status?.conditions, "DurableQueue")
          ?.status === "True",
      { timeoutMs: 30_000, description: "the GitBranch's DurableQueue True" },
    );

    // alice creates and edits hers; bob's first write closes her window, and his stays open.
    for (const name of names("a")) await write(alice, name, "v1");
    for (const name of names("a")) await write(alice, name, "v2");
    for (const name of names("b")) await write(bob, name, "v1");
    for (const name of names("b")) await write(bob, name, "v2");
    await eventually(
      async () => {
        const values = await queued();
        return names("b").every((name) => values.get(name)?.at(-1) === "v2");
      },
      { timeoutMs: 60_000, description: "bob's last values in the durable queue" },
    );
    // Mid-window: none of bob's values has reached Git yet.
    for (const name of names("b"))
      assert.equal(await show(fileOf(name)), undefined, `${name} not in Git yet`);

    await operator!.process.kill();
    assert.ok((await queued()).size > 0, "the queue outlives the process");

    await startProcess();
    await eventually(
      async () => {
        for (const name of [...names("a"), ...names("b")])
          if (!(await show(fileOf(name)))?.includes("k: v2")) return false;
        return true;
      },
      {
        timeoutMs: 90_000,
        description: () => `every last value in Git; last lines:\n${operator?.process.logTail()}`,
      },
    );
    // Every commit of alice's files is hers and every commit of bob's is his: one window each,
    // replayed as one commit, and the snapshot after the replay committed nothing over them.
    for (const name of names("a")) assert.deepEqual(await authorsOf(fileOf(name)), ["alice"], name);
    for (const name of names("b")) assert.deepEqual(await authorsOf(fileOf(name)), ["bob"], name);
    const bobs = await git.gitIn("state", [
      "log",
      "--format=%H",
      "main",
      "--",
      `${folder}/${namespace}/configmaps/b-*`,
    ]);
    assert.equal(bobs.split("\n").filter(Boolean).length, 1, "bob's window is one commit, made once");
    // Once the replayed writes are pushed, the queue is trimmed.
    await eventually(async () => (await queued()).size === 0, {
      timeoutMs: 30_000,
      description: "the durable queue trimmed after the push",
    });
  });

  it("with Redis away the branch says DurableQueueUnavailable and still writes; Redis back, DurableQueue is True again", async () => {
    assert.ok(operator, "the process of the test before runs on");
    await redis.stop();
    await write(alice, "c-0", "v1");
    await eventually(
      async () => {
        const queueCondition = findCondition(
          (await gitBranches(kc).get(namespace, "main"))?.status?.conditions,
          "DurableQueue",
        );
        return queueCondition?.status === "False" && queueCondition.reason === "DurableQueueUnavailable";
      },
      { timeoutMs: 30_000, description: "DurableQueue False, DurableQueueUnavailable" },
    );
    // Redis away is no failure of the branch: the write goes on from memory.
    assert.equal(
      findCondition((await gitBranches(kc).get(namespace, "main"))?.status?.conditions, "Ready")?.status,
      "True",
    );
    redis = await RedisServer.start(Number(redis.address.split(":").at(-1)));
    await write(bob, "c-1", "v1"); // another author closes alice's window
    await eventually(async () => (await show(fileOf("c-0")))?.includes("k: v1") ?? false, {
      timeoutMs: 60_000,
      description: "c-0 in Git",
    });
    // Its author may be the sentinel: with Redis away the audit facts did not travel either.
    await eventually(
      async () =>
        findCondition((await gitBranches(kc).get(namespace, "main"))?.status?.conditions, "DurableQueue")
          ?.status === "True",
      { timeoutMs: 30_000, description: "DurableQueue True again" },
    );
  });
});
