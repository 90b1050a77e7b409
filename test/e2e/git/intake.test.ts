import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { CoreV1Api } from "@kubernetes/client-node";
import { type KubeConfig } from "@kubernetes/client-node";
import { intakePaused } from "../../../internal/telemetry/instruments.ts";
import type { GitServer } from "../../support/gitserver.ts";
import { applyMirror } from "../../support/mirror.ts";
import {
  mirrorUser as user,
  startMirrorEnvironment,
  type MirrorEnvironment,
} from "../../support/mirrorenv.ts";
import { eventually } from "../../support/wait.ts";
import { clients, condition, conditionOf } from "../controllers/helpers.ts";

const namespace = "budget";

describe("the intake budget of a branch that cannot reach its remote", () => {
  let env: MirrorEnvironment;
  let git: GitServer;
  let kc: KubeConfig;
  let core: CoreV1Api;
  const paused = async () =>
    (await intakePaused.get()).values.find((v) => v.labels.gitbranch_namespace === namespace)?.value;

  before(async () => {
    // A tiny budget: a few ConfigMaps of 2 KiB each fill it.
    env = await startMirrorEnvironment([namespace], { branchBufferMaxSize: 16 * 1024 });
    ({ git, kc, core } = env);
    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "first" }, data: { a: "b" } },
    });
    await applyMirror(kc, namespace, env.url, user, [
      { name: "configs", path: "clusters/budget", rules: [{ apiGroups: [""], resources: ["configmaps"] }] },
    ]);
  });
  after(() => env?.stop());

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
    assert.match(condition(reported, "Ready")?.message ?? "", /intake is paused/);

    await git.start();
    for (const name of names) {
      await eventually(() => git.fileAt("state", "main", path(name)), {
        timeoutMs: 120_000,
        description: `${name} in Git`,
      });
    }
    assert.equal(await paused(), 0, "intake resumed once a push landed");
  });

  it("reconcile.configbutler.ai/requestedAt on the GitBranch re-reads the branch now, long before the refresh interval", async () => {
    await git.pushForeignCommit("state", {
      files: { "clusters/budget/kustomization.yaml": "resources: []\nnamePrefix: prod-\n" },
      message: "Prefix every name",
    });
    const { branches } = clients(kc);
    const branch = (await branches.get(namespace, "main"))!;
    await branches.jsonPatch(branch, [
      {
        op: "add",
        path: "/metadata/annotations",
        value: { "reconcile.configbutler.ai/requestedAt": new Date().toISOString() },
      },
    ]);
    const refused = await conditionOf(
      clients(kc).targets,
      namespace,
      "configs",
      "GitPathAccepted",
      "False",
      "UnsupportedContent",
      30_000,
    );
    assert.match(condition(refused, "GitPathAccepted")?.message ?? "", /namePrefix/);
  });
});
