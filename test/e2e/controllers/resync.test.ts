import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { ControlPlane } from "../../support/controlplane.ts";
import { GitServer } from "../../support/gitserver.ts";
import { installCrds } from "../../support/manifests.ts";
import { startOperator, type RunningOperator } from "../../support/operator.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";
import { eventually } from "../../support/wait.ts";
import { applyMirror } from "../../support/mirror.ts";

const namespace = "apps";
const user = { username: "gitops", password: "s3cret" };
const modes = ["Always", "OnEvent", "Never"] as const;

describe("resync after a restart: mark and sweep", () => {
  let plane: ControlPlane;
  let git: GitServer;
  let kc: KubeConfig;
  let core: CoreV1Api;
  let operator: RunningOperator | undefined;
  let workerRoot: string;
  const show = (path: string) => git.gitIn("state", ["show", `main:${path}`]).catch(() => undefined);
  const fileOf = (mode: string, name: string) =>
    `clusters/${mode.toLowerCase()}/apps/configmaps/${name}.yaml`;
  const start = () =>
    startOperator(kc, { inClusterKubeProviders: [`${namespace}/self`], workerRoot, pushCooldownMs: 0 });

  before(async () => {
    [plane, git] = await Promise.all([ControlPlane.start(), GitServer.start({ users: [user] })]);
    kc = plane.kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    await installCrds(kc);
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    const url = await git.createRepository("state");
    await applyMirror(
      kc,
      namespace,
      url,
      user,
      modes.map((mode) => ({
        name: mode.toLowerCase(),
        path: `clusters/${mode.toLowerCase()}`,
        rules: [{ apiGroups: [""], resources: ["configmaps"] }],
        prune: mode,
      })),
    );
    workerRoot = makeOwnedTempDir("workers");
  });
  after(async () => {
    await operator?.stop();
    await git?.close();
    await plane?.stop();
    if (workerRoot) removeOwnedTempDir(workerRoot);
  });

  it("sweeps an object deleted while the operator was stopped under Always only, and never another namespace's document", async () => {
    for (const name of ["kept", "deleted-while-down"]) {
      await core.createNamespacedConfigMap({ namespace, body: { metadata: { name }, data: { k: "v" } } });
    }
    operator = start();
    for (const mode of modes) {
      await eventually(() => show(fileOf(mode, "deleted-while-down")), {
        timeoutMs: 60_000,
        description: `${mode}'s first mirror`,
      });
    }
    await operator.stop();
    operator = undefined;

    await core.deleteNamespacedConfigMap({ namespace, name: "deleted-while-down" });
    // A document of another namespace in the same folder: outside the snapshot's collection.
    await git.pushForeignCommit("state", {
      files: {
        "clusters/always/other/configmaps/foreign.yaml":
          "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: foreign\n  namespace: other\n",
      },
    });
    operator = start();
    // A live create after the restart reaches each folder only after that target's snapshot,
    // which the same worker published first: its arrival proves the snapshot was applied.
    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "after-restart" }, data: { k: "v" } },
    });
    for (const mode of modes) {
      await eventually(() => show(fileOf(mode, "after-restart")), {
        timeoutMs: 60_000,
        description: `${mode}'s live create`,
      });
    }
    assert.equal(
      await show(fileOf("Always", "deleted-while-down")),
      undefined,
      "Always sweeps what the snapshot lacks",
    );
    assert.ok(
      await show(fileOf("OnEvent", "deleted-while-down")),
      "OnEvent keeps it: no delete was observed",
    );
    assert.ok(await show(fileOf("Never", "deleted-while-down")), "Never keeps everything");
    for (const mode of modes) assert.ok(await show(fileOf(mode, "kept")));
    assert.ok(
      await show("clusters/always/other/configmaps/foreign.yaml"),
      "a snapshot of one namespace never touches another's",
    );
  });

  it("prune Never keeps a document on a live delete", async () => {
    await core.deleteNamespacedConfigMap({ namespace, name: "kept" });
    for (const mode of ["Always", "OnEvent"] as const) {
      await eventually(async () => (await show(fileOf(mode, "kept"))) === undefined, {
        timeoutMs: 60_000,
        description: `${mode} to remove the deleted object's document`,
      });
    }
    // A create after the delete reaches Never's folder only after the delete did: same stream.
    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "after-delete" }, data: { k: "v" } },
    });
    await eventually(() => show(fileOf("Never", "after-delete")), {
      timeoutMs: 60_000,
      description: "Never's live create after the delete",
    });
    assert.ok(await show(fileOf("Never", "kept")), "Never keeps every document");
  });

  it("a restart with Git matching makes no commit", async () => {
    // What the cluster holds is in Git already: the earlier tests mirrored it.
    await operator?.stop();
    const before = (await git.gitIn("state", ["rev-parse", "main"])).trim();
    operator = start();
    await core.patchNamespacedConfigMap({
      namespace,
      name: "after-delete",
      body: [{ op: "replace", path: "/data/k", value: "edited-after-restart" }],
    });
    for (const mode of modes) {
      await eventually(
        async () => (await show(fileOf(mode, "after-delete")))?.includes("edited-after-restart"),
        {
          timeoutMs: 60_000,
          description: `${mode}'s live edit after the restart`,
        },
      );
    }
    // The edit came after each target's snapshot in the same stream: every commit since the
    // restart is there by now, and each is one target's edit of that one document.
    const made = (await git.gitIn("state", ["rev-list", `${before}..main`])).split("\n").filter(Boolean);
    const touched = [];
    for (const commit of made) {
      touched.push(
        (await git.gitIn("state", ["diff-tree", "--no-commit-id", "--name-only", "-r", commit])).trim(),
      );
    }
    assert.deepEqual(touched.sort(), modes.map((mode) => fileOf(mode, "after-delete")).sort());
  });
});
