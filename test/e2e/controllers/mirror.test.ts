import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { ControlPlane } from "../../support/controlplane.ts";
import { GitServer } from "../../support/gitserver.ts";
import { installCrds } from "../../support/manifests.ts";
import { startOperator, type RunningOperator } from "../../support/operator.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";
import { shippedOperatorIdentity } from "../../support/shippedrbac.ts";
import { eventually } from "../../support/wait.ts";
import { placementRefusals } from "../../../internal/telemetry/instruments.ts";
import { applyMirror } from "../../support/mirror.ts";
import { clients, condition, conditionOf } from "./helpers.ts";

const namespace = "apps";
const user = { username: "gitops", password: "s3cret" };

describe("the operator mirrors a cluster into Git", () => {
  let plane: ControlPlane;
  let git: GitServer;
  let kc: KubeConfig;
  let core: CoreV1Api;
  let operator: RunningOperator;
  let workerRoot: string;
  const show = (path: string) => git.gitIn("state", ["show", `main:${path}`]).catch(() => undefined);

  before(async () => {
    [plane, git] = await Promise.all([ControlPlane.start(), GitServer.start({ users: [user] })]);
    kc = plane.kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    await installCrds(kc);
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    const url = await git.createRepository("state");
    await applyMirror(kc, namespace, url, user, [
      {
        name: "configs",
        path: "clusters/dev/configs",
        rules: [{ apiGroups: [""], resources: ["configmaps", "secrets"] }],
      },
      {
        name: "services",
        path: "clusters/dev/services",
        rules: [{ apiGroups: [""], resources: ["services"] }],
      },
    ]);
    workerRoot = makeOwnedTempDir("workers");
    // As a user installs it: its ServiceAccount under config/rbac's roles.
    operator = startOperator((await shippedOperatorIdentity(plane, kc)).kubeConfig, {
      inClusterKubeProviders: [`${namespace}/self`],
      workerRoot,
      pushCooldownMs: 0,
    });
  });
  after(async () => {
    await operator?.stop();
    await git?.close();
    await plane?.stop();
    if (workerRoot) removeOwnedTempDir(workerRoot);
  });

  it("becomes Ready end to end: provider, branch, target and rule", async () => {
    const { targets, rules } = clients(kc);
    await conditionOf(targets, namespace, "configs", "Ready", "True", undefined, 60_000);
    await conditionOf(rules, namespace, "configs", "Ready", "True", undefined, 30_000);
  });

  it("writes a created ConfigMap, and each GitTarget writes only its own path, through one worker", async () => {
    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "app" }, data: { k: "v" } },
    });
    await core.createNamespacedService({
      namespace,
      body: { metadata: { name: "api" }, spec: { ports: [{ port: 80 }], selector: { app: "api" } } },
    });
    await eventually(() => show("clusters/dev/configs/apps/configmaps/app.yaml"), {
      timeoutMs: 60_000,
      description: "the ConfigMap in Git",
    });
    await eventually(() => show("clusters/dev/services/apps/services/api.yaml"), {
      timeoutMs: 60_000,
      description: "the Service in Git",
    });
    assert.equal(await show("clusters/dev/services/apps/configmaps/app.yaml"), undefined);
    assert.equal(await show("clusters/dev/configs/apps/services/api.yaml"), undefined);
    const service = (await show("clusters/dev/services/apps/services/api.yaml"))!;
    assert.doesNotMatch(service, /clusterIP/, "the allocated cluster IP is not desired state");

    const subjects = (await git.gitIn("state", ["log", "--format=%s", "main"])).split("\n");
    assert.ok(
      subjects.every((s) => !(s.includes("configs") && s.includes("services"))),
      "windows never mix targets",
    );
    assert.ok(operator.workers.worker(`${namespace}/main`), "one worker serves the branch");
  });

  it("publishes where the branch is as GitBranch status.remote, and accepts the target's path", async () => {
    const { branches, targets } = clients(kc);
    // Published at once the first time, then at most once a minute: it names a pushed commit.
    const history = (await git.gitIn("state", ["rev-list", "main"])).split("\n");
    const branch = await eventually(
      async () => {
        const b = await branches.get(namespace, "main");
        return history.includes(b?.status?.remote?.commit ?? "") && b;
      },
      { description: "status.remote to name a pushed commit" },
    );
    assert.equal(branch.status?.remote?.provedBy, "Push");
    assert.ok(branch.status?.remote?.lastVerifiedAt);
    await conditionOf(targets, namespace, "configs", "GitPathAccepted", "True");
  });

  it("refuses a Secret fail-safe and says so in the target's status, while the folder stays Ready", async () => {
    const { targets } = clients(kc);
    await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: "db" }, stringData: { password: "never-in-git" } },
    });
    // The credential Secret in the namespace is refused too; wait until db is named as well.
    const refused = await eventually(
      async () => {
        const t = await targets.get(namespace, "configs");
        const encryption = condition(t, "EncryptionConfigured");
        return (
          encryption?.reason === "EncryptionNotConfigured" &&
          encryption.message.includes("secrets apps/db") &&
          t
        );
      },
      { description: "the refusal of secrets apps/db in EncryptionConfigured" },
    );
    assert.equal(condition(refused, "EncryptionConfigured")?.status, "False");
    assert.equal(condition(refused, "Ready")?.status, "True");
    const history = await git.gitIn("state", ["log", "--all", "-p"]);
    assert.equal(history.includes("never-in-git"), false);
    const metrics = await placementRefusals.get();
    assert.ok(
      metrics.values.some(
        (v) =>
          v.labels.gittarget_name === "configs" &&
          v.labels.reason === "encryption_unavailable" &&
          v.value >= 1,
      ),
      "the refusal is counted",
    );
  });

  it("with attribution off every commit is committer-authored", async () => {
    const identities = (await git.gitIn("state", ["log", "--format=%an <%ae>|%cn <%ce>", "main"])).split(
      "\n",
    );
    assert.ok(identities.length > 1);
    for (const line of identities)
      assert.equal(
        line,
        "GitOps Reverser <noreply@configbutler.ai>|GitOps Reverser <noreply@configbutler.ai>",
      );
  });
});
