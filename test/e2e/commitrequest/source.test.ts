// The source-cluster path: a CommitRequest created on the cluster a GitTarget mirrors, served
// through the watch of the KubeProvider whose spec.commitRequests asks for it.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { commitRequests, gitTargets, kubeProviders, watchRules } from "../../../generated/v1alpha3/index.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import type { GitServer } from "../../support/gitserver.ts";
import { installCrds } from "../../support/manifests.ts";
import { applyMirror, mirrorFieldManager } from "../../support/mirror.ts";
import { mirrorUser, startMirrorEnvironment, type MirrorEnvironment } from "../../support/mirrorenv.ts";
import { eventually } from "../../support/wait.ts";
import { conditionOf } from "../controllers/helpers.ts";
import { createRequest, finishedRequest, readyOf } from "./fixture.ts";

// The same namespace name on both clusters: the KubeProvider's default grant admits it.
const namespace = "apps";
const apiVersion = "configbutler.ai/v1alpha3" as const;

describe("CommitRequest on a source cluster", () => {
  let env: MirrorEnvironment;
  let source: ControlPlane;
  let git: GitServer;
  let kc: KubeConfig;
  let sourceKc: KubeConfig;
  const file = `clusters/remote/${namespace}/configmaps/settings.yaml`;

  before(async () => {
    [env, source] = await Promise.all([
      startMirrorEnvironment([namespace], { commitRequestRetention: 3_000 }),
      ControlPlane.start(),
    ]);
    ({ git, kc } = env);
    sourceKc = source.kubeConfig();
    await installCrds(sourceKc);
    const sourceCore = sourceKc.makeApiClient(CoreV1Api);
    await sourceCore.createNamespace({ body: { metadata: { name: namespace } } });
    await sourceCore.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "settings" }, data: { k: "v1" } },
    });
    await applyMirror(kc, namespace, env.url, mirrorUser, []);
    await kc.makeApiClient(CoreV1Api).createNamespacedSecret({
      namespace,
      body: {
        metadata: { name: "source-kubeconfig" },
        stringData: { value: await readFile(source.kubeconfigPath, "utf8") },
      },
    });
    await kubeProviders(kc).apply(
      {
        apiVersion,
        kind: "KubeProvider",
        metadata: { name: "remote", namespace },
        spec: { secretRef: { name: "source-kubeconfig" }, commitRequests: "ReconcileAndDeleteFinished" },
      },
      mirrorFieldManager,
    );
    await gitTargets(kc).apply(
      {
        apiVersion,
        kind: "GitTarget",
        metadata: { name: "remote", namespace },
        spec: {
          gitBranchRef: { name: "main" },
          kubeProviderRef: { name: "remote" },
          path: "clusters/remote",
          commit: { window: { idleTimeout: "60s", maxDuration: "120s" } },
          allowedCommitRequests: [{ sourceNamespaces: { from: "Same" } }],
        },
      },
      mirrorFieldManager,
    );
    await watchRules(kc).apply(
      {
        apiVersion,
        kind: "WatchRule",
        metadata: { name: "remote", namespace },
        spec: { gitTargetRef: { name: "remote" }, rules: [{ apiGroups: [""], resources: ["configmaps"] }] },
      },
      mirrorFieldManager,
    );
    await eventually(() => git.fileAt("state", "main", file), {
      timeoutMs: 60_000,
      description: "the first mirror",
    });
  });
  after(async () => {
    await env?.stop();
    await source?.stop();
  });

  it("a request created on a source cluster is served through its KubeProvider", async () => {
    const served = await conditionOf(kubeProviders(kc), namespace, "remote", "CommitRequestsServed", "True");
    assert.match(
      served.status!.conditions!.find((c) => c.type === "CommitRequestsServed")!.message,
      /watched/,
    );
    await sourceKc.makeApiClient(CoreV1Api).patchNamespacedConfigMap({
      namespace,
      name: "settings",
      body: [{ op: "replace", path: "/data/k", value: "v2" }],
    });
    await createRequest(sourceKc, namespace, "from-source", {
      target: "remote",
      targetNamespace: namespace,
      message: "Saved from the source cluster",
    });
    const done = await finishedRequest(sourceKc, namespace, "from-source");
    assert.equal(readyOf(done)?.reason, "Committed", JSON.stringify(done.status));
    assert.equal(
      await git.gitIn("state", ["log", "-1", "--format=%s", done.status!.commit!]),
      "Saved from the source cluster",
    );
    assert.match((await git.fileAt("state", done.status!.commit!, file))!, /k: v2/);
    // ReconcileAndDeleteFinished: deleted on the source cluster once past its delete-after.
    await eventually(
      async () => (await commitRequests(sourceKc).get(namespace, "from-source")) === undefined,
      {
        timeoutMs: 30_000,
        description: "the finished request deleted from the source cluster",
      },
    );
  });

  it("a source-cluster request naming no GitTarget that exists is GitTargetNotFound, once attachTimeout passed", async () => {
    await createRequest(sourceKc, namespace, "lost", {
      target: "absent",
      targetNamespace: namespace,
      window: { attachTimeout: "1s" },
    });
    const done = await finishedRequest(sourceKc, namespace, "lost");
    assert.equal(readyOf(done)?.reason, "GitTargetNotFound", JSON.stringify(done.status));
    assert.match(readyOf(done)!.message, /apps\/absent does not exist/);
  });
});
