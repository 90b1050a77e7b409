import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import type { GitTarget } from "../../../generated/v1alpha3/index.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { installCrds } from "../../support/manifests.ts";
import { startOperator, type RunningOperator } from "../../support/operator.ts";
import { untilYoungerThan } from "../../support/wait.ts";
import { clients, condition, conditionOf } from "./helpers.ts";

const namespace = "team-a";

function target(name: string, path: string, branch = "main"): GitTarget {
  return {
    apiVersion: "configbutler.ai/v1alpha3",
    kind: "GitTarget",
    metadata: { name, namespace },
    spec: { gitBranchRef: { name: branch }, kubeProviderRef: { name: "in-cluster" }, path },
  };
}

describe("the GitTarget and WatchRule controllers", () => {
  let plane: ControlPlane;
  let kc: KubeConfig;
  let operator: RunningOperator;

  before(async () => {
    plane = await ControlPlane.start();
    kc = plane.kubeConfig();
    await installCrds(kc);
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
    await clients(kc).providers.apply(
      {
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "KubeProvider",
        metadata: { name: "in-cluster", namespace },
        spec: { inCluster: {} },
      },
      "test",
    );
    operator = startOperator(kc, { inClusterKubeProviders: [`${namespace}/in-cluster`] });
  });
  after(async () => {
    await operator?.stop();
    await plane?.stop();
  });

  it("reports GitBranchNotFound for a missing GitBranch, and recovers once it is created", async () => {
    const { targets, branches } = clients(kc);
    await targets.apply(target("first", "clusters/a"), "test");
    const waiting = await conditionOf(targets, namespace, "first", "Validated", "False", "GitBranchNotFound");
    assert.equal(condition(waiting, "Reconciling")?.status, "True", "a missing reference is waited for");
    await branches.apply(
      {
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "GitBranch",
        metadata: { name: "main", namespace },
        spec: { gitProviderRef: { name: "repo" }, branch: "main" },
      },
      "test",
    );
    await conditionOf(targets, namespace, "first", "Validated", "True");
    assert.ok(
      operator.sourceContexts
        .get(`${namespace}/in-cluster`)
        ?.watchManager.serves({ namespace, name: "first" }),
    );
  });

  it("refuses an overlapping path on the same GitBranch in status, and lets the older target keep its folder", async () => {
    const { targets } = clients(kc);
    // Which target is older is decided by creationTimestamp, to the second (then by uid).
    await untilYoungerThan((await targets.get(namespace, "first"))!);
    await targets.apply(target("nested", "clusters/a/apps"), "test");
    const refused = await conditionOf(targets, namespace, "nested", "Stalled", "True", "PathOverlap");
    assert.match(
      condition(refused, "Ready")?.message ?? "",
      /overlaps clusters\/a of the older GitTarget team-a\/first/,
    );
    assert.equal(
      operator.sourceContexts
        .get(`${namespace}/in-cluster`)
        ?.watchManager.serves({ namespace, name: "nested" }),
      false,
    );
    await conditionOf(targets, namespace, "first", "Validated", "True");

    await targets.apply(target("sibling", "clusters/b"), "test");
    await conditionOf(targets, namespace, "sibling", "Validated", "True");
    await targets.delete(namespace, "first");
    await conditionOf(targets, namespace, "nested", "Validated", "True", undefined, 30_000);
  });

  it("streams what a WatchRule selects and reports it resolved, and keeps out a source namespace the provider does not grant", async () => {
    const { rules, targets } = clients(kc);
    await rules.apply(
      {
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "WatchRule",
        metadata: { name: "apps", namespace },
        spec: {
          gitTargetRef: { name: "sibling" },
          rules: [
            { apiGroups: [""], resources: ["configmaps"] },
            { apiGroups: [""], resources: ["secrets"], sourceNamespace: "kube-system" },
          ],
        },
      },
      "test",
    );
    const refused = await conditionOf(
      rules,
      namespace,
      "apps",
      "SourceNamespaceAuthorized",
      "False",
      "SourceNamespaceNotAuthorized",
    );
    assert.match(
      condition(refused, "SourceNamespaceAuthorized")?.message ?? "",
      /secrets in namespace kube-system/,
    );
    const resolved = await conditionOf(rules, namespace, "apps", "ResourcesResolved", "True");
    assert.equal(resolved.status?.resolvedTypes, 1, "only the admitted item was planned");
    const streaming = await conditionOf(targets, namespace, "sibling", "StreamsRunning", "True");
    assert.deepEqual(streaming.status?.streams, { total: 1, running: 1, replaying: 0, blocked: 0 });
  });
});
