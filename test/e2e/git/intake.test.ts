import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { intakePaused } from "../../../internal/telemetry/instruments.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { GitServer } from "../../support/gitserver.ts";
import { installCrds } from "../../support/manifests.ts";
import { applyMirror } from "../../support/mirror.ts";
import { startOperator, type RunningOperator } from "../../support/operator.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";
import { eventually } from "../../support/wait.ts";
import { clients, conditionOf } from "../controllers/helpers.ts";

const user = { username: "gitops", password: "s3cret" };
const namespace = "budget";

describe("the intake budget of a branch that cannot reach its remote", () => {
  let plane: ControlPlane;
  let git: GitServer;
  let kc: KubeConfig;
  let core: CoreV1Api;
  let operator: RunningOperator;
  let workerRoot: string;
  const paused = async () =>
    (await intakePaused.get()).values.find((v) => v.labels.gitbranch_namespace === namespace)?.value;

  before(async () => {
    [plane, git] = await Promise.all([ControlPlane.start(), GitServer.start({ users: [user] })]);
    kc = plane.kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    await installCrds(kc);
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    const url = await git.createRepository("state");
    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "first" }, data: { a: "b" } },
    });
    await applyMirror(kc, namespace, url, user, [
      { name: "configs", path: "clusters/budget", rules: [{ apiGroups: [""], resources: ["configmaps"] }] },
    ]);
    workerRoot = makeOwnedTempDir("workers");
    // A tiny budget: a few ConfigMaps of 2 KiB each fill it.
    operator = startOperator(kc, {
      inClusterKubeProviders: [`${namespace}/self`],
      workerRoot,
      pushCooldownMs: 0,
      branchBufferMaxSize: 16 * 1024,
    });
  });
  after(async () => {
    await operator?.stop();
    await git?.close();
    await plane?.stop();
    if (workerRoot) removeOwnedTempDir(workerRoot);
  });

  it("with a tiny budget, intake pauses and resumes with nothing lost", async () => {
    const path = (name: string) => `clusters/budget/budget/configmaps/${name}.yaml`;
    await eventually(() => git.fileAt("state", "main", path("first")), {
      timeoutMs: 60_000,
      description: "the first write",
    });

    await git.stop();
    const names = Array.from({ length: 40 }, (_, i) => `big-${String(i).padStart(2, "0")}`);
    for (const name of names) {
      await core.createNamespacedConfigMap({
        namespace,
        body: { metadata: { name }, data: { blob: name.repeat(200) } },
      });
    }
    await eventually(async () => (await paused()) === 1, {
      timeoutMs: 60_000,
      description: "intake to pause",
    });
    const reported = await conditionOf(
      clients(kc).targets,
      namespace,
      "configs",
      "Ready",
      "False",
      "RemoteUnreachable",
      30_000,
    );
    assert.match(
      reported.status?.conditions?.find((c) => c.type === "Ready")?.message ?? "",
      /intake is paused/,
    );

    await git.start();
    for (const name of names) {
      await eventually(() => git.fileAt("state", "main", path(name)), {
        timeoutMs: 120_000,
        description: `${name} in Git`,
      });
    }
    assert.equal(await paused(), 0, "intake resumed once a push landed");
  });
});
