import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import type { GitTarget } from "../../../generated/v1alpha3/index.ts";
import type { GitServer } from "../../support/gitserver.ts";
import { applyMirror, mirrorFieldManager, mirrorGitTarget, type MirrorTarget } from "../../support/mirror.ts";
import { mirrorUser, startMirrorEnvironment, type MirrorEnvironment } from "../../support/mirrorenv.ts";
import { eventually } from "../../support/wait.ts";
import { clients, condition, conditionOf } from "./helpers.ts";

const namespace = "gates";
const configMaps = [{ apiGroups: [""], resources: ["configmaps"] }];
// Two suspended targets: a snapshot sweeps under Always only, so OnEvent shows the deletes a
// suspended target keeps. The witness is never suspended: once it has the edits, so would they.
const always: MirrorTarget = { name: "always", path: "clusters/always", rules: configMaps, prune: "Always" };
const onEvent: MirrorTarget = {
  name: "onevent",
  path: "clusters/onevent",
  rules: configMaps,
  prune: "OnEvent",
};
const witness: MirrorTarget = { name: "witness", path: "clusters/witness", rules: configMaps };

describe("the gates a GitTarget's spec and annotations set", () => {
  let env: MirrorEnvironment;
  let git: GitServer;
  let kc: KubeConfig;
  let core: CoreV1Api;
  const file = (t: MirrorTarget, name: string) => `${t.path}/${namespace}/configmaps/${name}.yaml`;
  const show = (t: MirrorTarget, name: string) => git.fileAt("state", "main", file(t, name));
  /** The folder holds what live holds: the edit, the create, and not the delete. */
  const converged = async (t: MirrorTarget) =>
    (await show(t, "edited"))?.includes("k: v2") &&
    (await show(t, "created")) !== undefined &&
    (await show(t, "deleted")) === undefined;
  const suspend = (t: MirrorTarget, value: boolean) =>
    clients(kc).targets.apply(
      { ...mirrorGitTarget(namespace, t), spec: { ...mirrorGitTarget(namespace, t).spec, suspend: value } },
      mirrorFieldManager,
    );

  before(async () => {
    env = await startMirrorEnvironment([namespace]);
    ({ git, kc, core } = env);
    for (const name of ["edited", "deleted"])
      await core.createNamespacedConfigMap({ namespace, body: { metadata: { name }, data: { k: "v1" } } });
    await applyMirror(kc, namespace, env.url, mirrorUser, [always, onEvent, witness]);
    for (const t of [always, onEvent, witness])
      await eventually(() => show(t, "deleted"), {
        timeoutMs: 60_000,
        description: `${t.name}'s first mirror`,
      });
  });
  after(() => env?.stop());

  it("a suspended GitTarget writes nothing and replays on resume", async () => {
    const { targets } = clients(kc);
    for (const t of [always, onEvent]) {
      await suspend(t, true);
      const suspended = await conditionOf<GitTarget>(
        targets,
        namespace,
        t.name,
        "Ready",
        "False",
        "Suspended",
      );
      assert.equal(condition(suspended, "Reconciling")?.status, "False", "nothing is under way");
      assert.equal(condition(suspended, "Stalled")?.status, "False", "nothing is broken");
      assert.match(condition(suspended, "Ready")?.message ?? "", /spec\.suspend is true/);
    }
    const before = (await git.branchHead("state", "main"))!;

    await core.patchNamespacedConfigMap({
      namespace,
      name: "edited",
      body: [{ op: "replace", path: "/data/k", value: "v2" }],
    });
    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "created" }, data: { k: "v1" } },
    });
    await core.deleteNamespacedConfigMap({ namespace, name: "deleted" });
    await eventually(() => converged(witness), { timeoutMs: 60_000, description: "the witness's folder" });
    const changed = await git.gitIn("state", [
      "diff",
      "--name-only",
      before,
      "main",
      "--",
      always.path,
      onEvent.path,
    ]);
    assert.equal(changed, "", "a suspended target's folder is not written");

    for (const t of [always, onEvent]) await suspend(t, false);
    for (const t of [always, onEvent]) {
      await eventually(() => converged(t), {
        timeoutMs: 60_000,
        description: `${t.name}'s folder after resume`,
      });
      await conditionOf(targets, namespace, t.name, "Ready", "True", undefined, 60_000);
    }
  });

  it("requestedAt re-checks a GitTarget", async () => {
    const { targets } = clients(kc);
    await conditionOf(targets, namespace, witness.name, "GitPathAccepted", "True");
    // Broken in Git, where no Kubernetes event tells: only the 10-minute refresh would see it.
    await git.pushForeignCommit("state", {
      files: { [`${witness.path}/kustomization.yaml`]: "resources: []\nnamePrefix: prod-\n" },
      message: "Prefix every name",
    });
    const token = new Date().toISOString();
    const current = (await targets.get(namespace, witness.name))!;
    await targets.jsonPatch(current, [
      {
        op: "add",
        path: "/metadata/annotations",
        value: { "reconcile.configbutler.ai/requestedAt": token },
      },
    ]);
    const handled = await eventually(
      async () => {
        const t = await targets.get(namespace, witness.name);
        return t?.status?.lastHandledReconcileAt === token && t;
      },
      { description: "status.lastHandledReconcileAt to name the request" },
    );
    // Recorded only once the folder was read again, so the conditions it sits beside answer it.
    const accepted = condition(handled, "GitPathAccepted");
    assert.equal(accepted?.status, "False", JSON.stringify(accepted));
    assert.equal(accepted?.reason, "UnsupportedContent");
    assert.match(accepted?.message ?? "", /namePrefix/);
  });
});
