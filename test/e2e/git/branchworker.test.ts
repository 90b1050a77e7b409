import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { BranchWorker } from "../../../internal/git/worker/branchworker.ts";
import { Clone } from "../../../internal/git/engine/clone.ts";
import type { DecidedWrite, TargetSettings } from "../../../internal/git/folder/writes.ts";
import { compileWatchRule } from "../../../internal/rulestore/compile.ts";
import { RuleStore } from "../../../internal/rulestore/store.ts";
import { WatchManager } from "../../../internal/watch/manager.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { GitServer } from "../../support/gitserver.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";
import { eventually } from "../../support/wait.ts";
import { committing, unheardFolders } from "../../support/worker.ts";
import { quiet } from "../../support/logger.ts";

const user = { username: "gitops", password: "s3cret" };
const committer = { name: "GitOps Reverser", email: "noreply@configbutler.ai" };

describe("the BranchWorker writes a GitTarget's stream to Git", () => {
  let plane: ControlPlane;
  let git: GitServer;
  let kc: KubeConfig;
  let core: CoreV1Api;
  let dir: string;
  const rules = new RuleStore();
  let watches: WatchManager;
  let worker: BranchWorker;
  const stopWatches = new AbortController();
  let watching: Promise<void>;
  const refused: string[] = [];
  const target: TargetSettings = {
    key: "apps/t",
    path: "clusters/dev",
    timers: { idleTimeoutMs: 1_000, maxDurationMs: 60_000 },
    prune: "OnEvent",
  };

  const head = () => git.branchHead("cluster-state", "main");
  const show = (path: string) => git.gitIn("cluster-state", ["show", `main:${path}`]).catch(() => undefined);
  const commitCount = async () =>
    Number((await git.gitIn("cluster-state", ["rev-list", "--count", "main"]).catch(() => "0")) || 0);

  before(async () => {
    [plane, git] = await Promise.all([ControlPlane.start(), GitServer.start({ users: [user] })]);
    kc = plane.kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: "apps" } } });
    const url = await git.createRepository("cluster-state");
    dir = makeOwnedTempDir("worker");
    worker = new BranchWorker({
      clone: new Clone({ dir: join(dir, "clone"), url, branch: "main", auth: user }),
      committer,
      bufferLimitBytes: 8 * 1024 * 1024,
      pushCooldownMs: 0,
      materialize: committing(committer, (_w: DecidedWrite, identity) =>
        refused.push(`${identity.resource}/${identity.name}`),
      ),
      folders: unheardFolders,
      logger: quiet,
    });
    worker.start();
    rules.set(
      "WatchRule/apps/r",
      compileWatchRule({
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "WatchRule",
        metadata: { name: "r", namespace: "apps" },
        spec: {
          gitTargetRef: { name: "t" },
          rules: [{ apiGroups: [""], resources: ["configmaps", "secrets"] }],
        },
      }),
    );
    watches = new WatchManager(kc, rules, quiet);
    watches.serve({ namespace: "apps", name: "t" });
    watching = watches.start(stopWatches.signal);
    void (async () => {
      for await (const item of watches.streamFor({ namespace: "apps", name: "t" }))
        worker.enqueue(target, item);
    })();
  });
  after(async () => {
    stopWatches.abort();
    await watching;
    await worker?.stop();
    await git?.close();
    await plane?.stop();
    if (dir) removeOwnedTempDir(dir);
  });

  it("puts a created ConfigMap at the built-in path, in a commit by the configured committer, after the idle window", async () => {
    await core.createNamespacedConfigMap({
      namespace: "apps",
      body: { metadata: { name: "app" }, data: { color: "blue" } },
    });
    const content = await eventually(() => show("clusters/dev/apps/configmaps/app.yaml"), {
      description: "the ConfigMap's file on the remote",
    });
    assert.match(
      content,
      /^apiVersion: v1\nkind: ConfigMap\nmetadata:\n {2}name: app\n {2}namespace: apps\ndata:\n {2}color: blue/,
    );
    assert.doesNotMatch(content, /resourceVersion|managedFields|uid:/);
    const log = await git.gitIn("cluster-state", ["log", "-1", "--format=%an <%ae>|%cn <%ce>", "main"]);
    assert.equal(log, "GitOps Reverser <noreply@configbutler.ai>|GitOps Reverser <noreply@configbutler.ai>");
    assert.ok(await show("clusters/dev/README.md"), "the first write bootstraps the folder");
    assert.ok((await show("clusters/dev/.gittargetignore")) !== undefined);
  });

  it("edits the file in place, and a delete removes it", async () => {
    await core.patchNamespacedConfigMap({
      namespace: "apps",
      name: "app",
      body: [{ op: "replace", path: "/data/color", value: "green" }],
    });
    await eventually(
      async () => (await show("clusters/dev/apps/configmaps/app.yaml"))?.includes("color: green"),
      {
        description: "the edit on the remote",
      },
    );
    await core.deleteNamespacedConfigMap({ namespace: "apps", name: "app" });
    await eventually(async () => (await show("clusters/dev/apps/configmaps/app.yaml")) === undefined, {
      description: "the file gone from the remote",
    });
    assert.ok(await show("clusters/dev/README.md"), "the bootstrap files outlive the last resource");
  });

  it("makes one commit of five edits inside one window", async () => {
    await core.createNamespacedConfigMap({
      namespace: "apps",
      body: { metadata: { name: "busy" }, data: { count: "0" } },
    });
    await eventually(() => show("clusters/dev/apps/configmaps/busy.yaml"), { description: "the create" });
    const before = await commitCount();
    for (let n = 1; n <= 5; n++) {
      await core.patchNamespacedConfigMap({
        namespace: "apps",
        name: "busy",
        body: [{ op: "replace", path: "/data/count", value: String(n) }],
      });
    }
    let last = "";
    await eventually(
      async () => {
        last = (await show("clusters/dev/apps/configmaps/busy.yaml")) ?? "";
        return /^ {2}count: "5"$/m.test(last);
      },
      { description: "the last edit" },
    ).catch((err: unknown) => assert.fail(`${String(err)}; the file reads:\n${last}`));
    assert.equal(await commitCount(), before + 1);
  });

  it("updates a document a human placed elsewhere in the folder, instead of duplicating it", async () => {
    await git.pushForeignCommit("cluster-state", {
      files: {
        "clusters/dev/hand/placed.yaml":
          "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: placed\n  namespace: apps\ndata:\n  by: hand\n",
      },
    });
    await core.createNamespacedConfigMap({
      namespace: "apps",
      body: { metadata: { name: "placed" }, data: { by: "cluster" } },
    });
    await eventually(async () => (await show("clusters/dev/hand/placed.yaml"))?.includes("by: cluster"), {
      description: "the hand-placed file updated",
    });
    assert.equal(await show("clusters/dev/apps/configmaps/placed.yaml"), undefined);
  });

  it("never writes a Secret, anywhere in the history", async () => {
    await core.createNamespacedSecret({
      namespace: "apps",
      body: { metadata: { name: "db" }, stringData: { password: "hunter2-never-in-git" } },
    });
    await core.createNamespacedConfigMap({
      namespace: "apps",
      body: { metadata: { name: "after-secret" }, data: { k: "v" } },
    });
    await eventually(() => show("clusters/dev/apps/configmaps/after-secret.yaml"), {
      description: "the later ConfigMap",
    });
    assert.ok(refused.includes("secrets/db"), "the refusal is reported");
    const history = await git.gitIn("cluster-state", ["log", "--all", "-p", "--format=%H %s"]);
    assert.equal(history.includes("hunter2-never-in-git"), false);
    assert.equal(history.includes(Buffer.from("hunter2-never-in-git").toString("base64")), false);
    assert.equal((await head()) !== undefined, true);
  });
});
