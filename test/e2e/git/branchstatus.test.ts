import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { EventsV1Api, PatchStrategy, setHeaderOptions, type CoreV1Api } from "@kubernetes/client-node";
import type { KubeConfig } from "@kubernetes/client-node";
import type { GitBranch } from "../../../generated/v1alpha3/index.ts";
import type { GitServer } from "../../support/gitserver.ts";
import { applyMirror } from "../../support/mirror.ts";
import {
  mirrorUser as user,
  startMirrorEnvironment,
  type MirrorEnvironment,
} from "../../support/mirrorenv.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";
import { eventually } from "../../support/wait.ts";
import { clients, condition, conditionOf } from "../controllers/helpers.ts";

const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
type Remote = NonNullable<NonNullable<GitBranch["status"]>["remote"]>;

/** A namespace mirrored into its own branch, named after it, with one ConfigMap already there. */
function scenario(getEnv: () => MirrorEnvironment) {
  const env = () => getEnv();
  return {
    inGit: (
      branch: string,
      path: string,
      test: (c: string) => boolean,
      description: string,
      timeoutMs = 60_000,
    ) =>
      eventually(
        async () => {
          const content = await env().git.fileAt("state", branch, path);
          return content !== undefined && test(content) && content;
        },
        { timeoutMs, description },
      ),
    remoteOf: (namespace: string, test: (remote: Remote) => boolean, description: string) =>
      eventually(
        async () => {
          const remote = (await clients(env().kc).branches.get(namespace, "main"))?.status?.remote;
          return remote !== undefined && test(remote) && remote;
        },
        { timeoutMs: 30_000, description },
      ),
    mirror: async (namespace: string, parentBranch?: string) => {
      const { kc, url } = env();
      const rules = [{ apiGroups: [""], resources: ["configmaps"] }];
      await applyMirror(
        kc,
        namespace,
        url,
        user,
        [{ name: namespace, path: `clusters/${namespace}`, rules }],
        namespace,
        parentBranch,
      );
    },
  };
}

describe("a GitBranch reports what its worker meets on the remote", () => {
  let env: MirrorEnvironment;
  let git: GitServer;
  let kc: KubeConfig;
  let core: CoreV1Api;
  const { inGit, remoteOf, mirror } = scenario(() => env);

  before(async () => {
    env = await startMirrorEnvironment(["outage", "orphan"]);
    ({ git, kc, core } = env);
  });
  after(() => env?.stop());

  it("GitBranch is not Ready while its worker's pushes fail", async () => {
    const { branches } = clients(kc);
    const path = "clusters/outage/outage/configmaps/first.yaml";
    await core.createNamespacedConfigMap({
      namespace: "outage",
      body: { metadata: { name: "first" }, data: { round: "r0" } },
    });
    await mirror("outage");
    await inGit("outage", path, () => true, "the snapshot");
    await conditionOf(branches, "outage", "main", "Ready", "True", undefined, 30_000);

    await git.stop();
    await core.patchNamespacedConfigMap(
      { namespace: "outage", name: "first", body: { data: { round: "r1" } } },
      mergePatch,
    );
    const failing = await conditionOf(
      branches,
      "outage",
      "main",
      "Ready",
      "False",
      "RemoteUnreachable",
      60_000,
    );
    const message = condition(failing, "Ready")?.message ?? "";
    assert.match(message, /^The Git remote has failed since \d{4}-\d\d-\d\dT/);
    assert.match(message, /1 decided write\(s\) are kept and retried/);
    assert.equal(condition(failing, "Reconciling")?.status, "True");
    assert.equal(condition(failing, "Stalled")?.status, "False");
    const down = await remoteOf(
      "outage",
      (r) => r.failingSince !== undefined,
      "status.remote saying since when",
    );
    assert.ok(down.lastError, "status.remote says what failed");

    await git.start();
    await inGit("outage", path, (c) => c.includes("round: r1"), "the kept write, once the server is back");
    await conditionOf(branches, "outage", "main", "Ready", "True", undefined, 30_000);
    const up = await remoteOf(
      "outage",
      (r) => r.failingSince === undefined,
      "status.remote without the outage",
    );
    assert.equal(up.provedBy, "Push");
    assert.equal(up.lastError, undefined);
    assert.equal(up.commit, await git.branchHead("state", "outage"));
  });

  it("ParentBranchNotFound, then the parent appears", async () => {
    const { branches } = clients(kc);
    await mirror("orphan", "later");
    await core.createNamespacedConfigMap({
      namespace: "orphan",
      body: { metadata: { name: "held" }, data: { a: "b" } },
    });
    const stalled = await conditionOf(
      branches,
      "orphan",
      "main",
      "Ready",
      "False",
      "ParentBranchNotFound",
      60_000,
    );
    assert.match(
      condition(stalled, "Ready")?.message ?? "",
      /parent branch "later" \(spec.parentBranch\) does not exist/,
    );
    assert.equal(condition(stalled, "Stalled")?.status, "True");
    assert.equal(await git.branchHead("state", "orphan"), undefined, "nothing is pushed without its parent");

    const parent = await git.pushForeignCommit("state", {
      branch: "later",
      startFrom: "main",
      files: { "LATER.md": "the parent, made by a person\n" },
    });
    await inGit(
      "orphan",
      "clusters/orphan/orphan/configmaps/held.yaml",
      () => true,
      "the held write",
      120_000,
    );
    await conditionOf(branches, "orphan", "main", "Ready", "True", undefined, 30_000);
    await git.gitIn("state", ["merge-base", "--is-ancestor", parent, "orphan"]);
    assert.equal(await git.fileAt("state", "orphan", "LATER.md"), "the parent, made by a person\n");
  });
});

describe("deleting a GitBranch", () => {
  let env: MirrorEnvironment;
  let workerRoot: string;
  const { inGit, mirror } = scenario(() => env);

  before(async () => {
    workerRoot = makeOwnedTempDir("workers");
    // A long push cooldown keeps a decided write waiting in the worker after the first push.
    env = await startMirrorEnvironment(["leaving", "stranded"], { pushCooldownMs: 600_000, workerRoot });
  });
  after(async () => {
    await env?.stop();
    removeOwnedTempDir(workerRoot);
  });

  /** Mirrors the namespace, and leaves one decided write waiting in its worker. */
  async function withPendingWrite(
    namespace: string,
    beforeEdit: () => Promise<unknown> = () => Promise.resolve(),
  ) {
    const { core, operator } = env;
    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "first" }, data: { a: "b" } },
    });
    await mirror(namespace);
    await inGit(
      namespace,
      `clusters/${namespace}/${namespace}/configmaps/first.yaml`,
      () => true,
      "the snapshot",
    );
    // Settled before the edit, so the one write the edit decides is the only one held: every
    // stream replayed (Ready), and whatever the replays decided published.
    await conditionOf(clients(env.kc).targets, namespace, namespace, "Ready", "True", undefined, 60_000);
    await eventually(() => operator.workers.worker(`${namespace}/main`)?.backlog === 0, {
      description: "the snapshot's writes published",
    });
    await beforeEdit();
    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "held" }, data: { c: "d" } },
    });
    await eventually(() => operator.workers.worker(`${namespace}/main`)?.backlog === 1, {
      description: "the edit decided and waiting out the push cooldown",
    });
    return (await clients(env.kc).branches.get(namespace, "main"))!;
  }

  const gone = (namespace: string) =>
    eventually(async () => (await clients(env.kc).branches.get(namespace, "main")) === undefined, {
      timeoutMs: 60_000,
      description: `GitBranch ${namespace}/main gone`,
    });

  it("deleting a GitBranch publishes what its worker holds before the finalizer goes", async () => {
    const branch = await withPendingWrite("leaving");
    const held = "clusters/leaving/leaving/configmaps/held.yaml";
    assert.equal(await env.git.fileAt("state", "leaving", held), undefined, "the write is still held");

    await clients(env.kc).branches.delete("leaving", "main");
    await gone("leaving");
    assert.ok(await env.git.fileAt("state", "leaving", held), "published before the finalizer went");
    assert.equal(env.operator.workers.worker("leaving/main"), undefined, "the worker is stopped");
    assert.equal(existsSync(join(workerRoot, branch.metadata.uid!)), false, "its directory is removed");
  });

  it("deleting a GitBranch whose remote is down reports what its worker could not publish", async () => {
    await withPendingWrite("stranded", () => env.git.stop());
    try {
      await clients(env.kc).branches.delete("stranded", "main");
      await gone("stranded");
      const events = await env.kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace: "stranded" });
      const reported = events.items.find((e) => e.reason === "WritesNotPublished");
      assert.ok(reported, "a Warning Event names what was not published");
      assert.equal(reported.type, "Warning");
      assert.equal(reported.regarding?.name, "main");
      assert.match(reported.note ?? "", /1 decided write\(s\) its branch worker could not publish/);
    } finally {
      await env.git.start();
    }
  });
});
