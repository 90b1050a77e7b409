import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, PatchStrategy, setHeaderOptions, type KubeConfig } from "@kubernetes/client-node";
import { watchRules, type WatchRule } from "../../../generated/v1alpha3/index.ts";
import { watchEventsExcluded } from "../../../internal/telemetry/instruments.ts";
import { startAttributedMirror, type AttributedMirror } from "../../support/attributedmirror.ts";
import { grantEditing } from "../../support/attributionenv.ts";
import { mirrorFieldManager } from "../../support/mirror.ts";
import type { TestIdentity } from "../../support/controlplane.ts";
import { eventually } from "../../support/wait.ts";
import { condition } from "../controllers/helpers.ts";

const namespace = "team-a";
const folder = "clusters/dev";
const fileOf = (name: string) => `${folder}/${namespace}/configmaps/${name}.yaml`;
const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
const deployerName = `system:serviceaccount:${namespace}:deployer`;

async function excludedByUser(): Promise<number> {
  const metric = await watchEventsExcluded.get();
  return metric.values
    .filter((v) => v.labels.gittarget_name === "configs" && v.labels.reason === "user")
    .reduce((sum, v) => sum + v.value, 0);
}

describe("who to ignore, by user: with attribution on, a write by an excluded user is not mirrored", () => {
  let mirror: AttributedMirror;
  let kc: KubeConfig;
  let alice: TestIdentity;
  let deployer: TestIdentity;
  let marks = 0;
  const patch = (who: TestIdentity, name: string, data: Record<string, string>) =>
    who.kubeConfig
      .makeApiClient(CoreV1Api)
      // A merge patch: each names only the keys it changes.
      .patchNamespacedConfigMap({ namespace, name, body: { data } }, mergePatch);
  const create = (who: TestIdentity, name: string, data: Record<string, string>) =>
    who.kubeConfig
      .makeApiClient(CoreV1Api)
      .createNamespacedConfigMap({ namespace, body: { metadata: { name }, data } });
  /** Alice's write to a marker, waited for in Git: whatever the collection routed before it is in Git too. */
  const barrier = async () => {
    const value = `m${++marks}`;
    await patch(alice, "marker", { at: value });
    await eventually(async () => (await mirror.show(fileOf("marker")))?.includes(value), {
      timeoutMs: 60_000,
      description: `the marker at ${value} in Git`,
    });
  };

  before(async () => {
    const rules: WatchRule["spec"]["rules"] = [{ apiGroups: [""], resources: ["configmaps"] }];
    mirror = await startAttributedMirror({ namespace, folder, rules });
    kc = mirror.kc;
    alice = await mirror.plane.mintUser("alice");
    deployer = await mirror.plane.serviceAccountToken(namespace, "deployer");
    await grantEditing(kc, namespace, [
      { kind: "User", name: "alice", apiGroup: "rbac.authorization.k8s.io" },
      { kind: "ServiceAccount", name: "deployer", namespace },
    ]);
    await watchRules(kc).apply(
      {
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "WatchRule",
        metadata: { name: "configs", namespace },
        spec: { gitTargetRef: { name: "configs" }, rules, excludeUsers: [deployerName] },
      },
      mirrorFieldManager,
    );
    await create(alice, "marker", { at: "m0" });
  });
  after(async () => {
    await mirror?.stop();
  });

  it("the rule can judge excludeUsers, and says so", async () => {
    // Reported for the generation that names excludeUsers: the plan that judges by it is in place.
    const rule = await eventually(
      async () => {
        const r = await watchRules(kc).get(namespace, "configs");
        const effective = condition(r, "ExclusionsEffective");
        return effective?.observedGeneration === r?.metadata.generation && effective?.status === "True" && r;
      },
      { description: "ExclusionsEffective True for the generation with excludeUsers" },
    );
    assert.equal(condition(rule, "Ready")?.status, "True");
  });

  it("a write by an excluded user is not mirrored; the next write by anyone else is", async () => {
    await create(alice, "shared", { replicas: "1" });
    await eventually(async () => (await mirror.show(fileOf("shared")))?.includes("replicas"), {
      timeoutMs: 60_000,
      description: "alice's ConfigMap in Git",
    });
    const before = await excludedByUser();
    await patch(deployer, "shared", { image: "app:v2" });
    await eventually(async () => (await excludedByUser()) > before, {
      description: "the deployer's write counted as excluded by user",
    });
    await barrier();
    assert.doesNotMatch((await mirror.show(fileOf("shared")))!, /app:v2/, "not mirrored");

    await patch(alice, "shared", { replicas: "3" });
    const mirrored = await eventually(
      async () => {
        const text = await mirror.show(fileOf("shared"));
        return text?.includes('replicas: "3"') && text;
      },
      { timeoutMs: 60_000, description: "alice's next write in Git" },
    );
    assert.match(mirrored, /image: app:v2/, "the object as it then is, the excluded change included");
    assert.equal(
      await mirror.lastCommit(fileOf("shared")),
      "alice <alice@noreply.cluster.local>",
      "authored by the writer whose write was mirrored",
    );
  });
});
