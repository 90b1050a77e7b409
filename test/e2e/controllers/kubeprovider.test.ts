import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { ControlPlane } from "../../support/controlplane.ts";
import { installCrds } from "../../support/manifests.ts";
import { startOperator, type RunningOperator } from "../../support/operator.ts";
import { nextItem } from "../../support/streams.ts";
import { eventually } from "../../support/wait.ts";
import { clients, condition, conditionOf } from "./helpers.ts";

describe("the KubeProvider controller", () => {
  let control: ControlPlane;
  let source: ControlPlane;
  let kc: KubeConfig;
  let operator: (RunningOperator & { errors: string[] }) | undefined;

  before(async () => {
    [control, source] = await Promise.all([ControlPlane.start(), ControlPlane.start()]);
    kc = control.kubeConfig();
    await installCrds(kc);
    for (const name of ["team-a", "team-b"])
      await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
    await source
      .kubeConfig()
      .makeApiClient(CoreV1Api)
      .createNamespace({ body: { metadata: { name: "team-b" } } });
  });
  after(async () => {
    await operator?.stop();
    await Promise.all([control?.stop(), source?.stop()]);
  });

  it("holds an inCluster KubeProvider the installation does not list Stalled with InClusterNotAuthorized, and makes it Ready once listed", async () => {
    const { providers } = clients(kc);
    await providers.apply(
      {
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "KubeProvider",
        metadata: { name: "in-cluster", namespace: "team-a" },
        spec: { inCluster: {} },
      },
      "test",
    );
    operator = startOperator(kc);
    const refused = await conditionOf(
      providers,
      "team-a",
      "in-cluster",
      "Stalled",
      "True",
      "InClusterNotAuthorized",
    );
    assert.match(condition(refused, "Ready")?.message ?? "", /--in-cluster-kube-providers/);
    assert.equal(
      operator.sourceContexts.get("team-a/in-cluster"),
      undefined,
      "a refused provider gets no source context",
    );
    await operator.stop();

    operator = startOperator(kc, { inClusterKubeProviders: ["team-a/in-cluster"] });
    const ready = await conditionOf(providers, "team-a", "in-cluster", "Ready", "True");
    assert.equal(ready.status?.credential, "InCluster");
    assert.equal(ready.status?.auditRoute, "team-a.in-cluster");
    assert.ok(operator.sourceContexts.get("team-a/in-cluster"));
  });

  it("connects a kubeconfig-Secret KubeProvider to a second cluster, and streams its targets from there", async () => {
    const { providers, targets, rules } = clients(kc);
    operator ??= startOperator(kc);
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespacedSecret({
      namespace: "team-b",
      body: {
        metadata: { name: "source-kubeconfig" },
        stringData: { value: await readFile(source.kubeconfigPath, "utf8") },
      },
    });
    await providers.apply(
      {
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "KubeProvider",
        metadata: { name: "source", namespace: "team-b" },
        spec: { secretRef: { name: "source-kubeconfig" } },
      },
      "test",
    );
    const ready = await conditionOf(providers, "team-b", "source", "Ready", "True");
    assert.equal(ready.status?.server, source.server);

    await targets.apply(
      {
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "GitTarget",
        metadata: { name: "mirror", namespace: "team-b" },
        spec: { gitBranchRef: { name: "main" }, kubeProviderRef: { name: "source" }, path: "team-b" },
      },
      "test",
    );
    await rules.apply(
      {
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "WatchRule",
        metadata: { name: "configmaps", namespace: "team-b" },
        spec: { gitTargetRef: { name: "mirror" }, rules: [{ apiGroups: [""], resources: ["configmaps"] }] },
      },
      "test",
    );
    // The GitBranch does not exist here, so the target is not served yet: create it, and the
    // target's references hold.
    await clients(kc).branches.apply(
      {
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "GitBranch",
        metadata: { name: "main", namespace: "team-b" },
        spec: { gitProviderRef: { name: "repo" }, branch: "main" },
      },
      "test",
    );
    await conditionOf(targets, "team-b", "mirror", "Validated", "True");
    await source
      .kubeConfig()
      .makeApiClient(CoreV1Api)
      .createNamespacedConfigMap({
        namespace: "team-b",
        body: { metadata: { name: "from-the-source" }, data: { k: "v" } },
      });
    const stream = operator.sourceContexts
      .get("team-b/source")!
      .watchManager.streamFor({ namespace: "team-b", name: "mirror" });
    const names: string[] = [];
    while (!names.includes("from-the-source")) {
      const item = await nextItem(
        stream,
        `the source cluster's ConfigMap in the stream (seen ${names.join(", ")})`,
      );
      if (item.type === "snapshot") names.push(...item.objects.map((o) => o.identity.name));
      if (item.type === "upsert") names.push(item.identity.name);
    }
  });

  it("rebuilds only the context of the provider whose Secret rotated", async () => {
    const { providers } = clients(kc);
    operator ??= startOperator(kc);
    const core = kc.makeApiClient(CoreV1Api);
    const content = await readFile(source.kubeconfigPath, "utf8");
    await core.createNamespacedSecret({
      namespace: "team-b",
      body: { metadata: { name: "other-kubeconfig" }, stringData: { value: content } },
    });
    await providers.apply(
      {
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "KubeProvider",
        metadata: { name: "other", namespace: "team-b" },
        spec: { secretRef: { name: "other-kubeconfig" } },
      },
      "test",
    );
    await conditionOf(providers, "team-b", "other", "Ready", "True");
    const contexts = operator.sourceContexts;
    const [rotatedBefore, otherBefore] = [contexts.get("team-b/source"), contexts.get("team-b/other")];
    assert.ok(rotatedBefore && otherBefore);

    // A rotation: the same cluster, a new Secret revision.
    await core.replaceNamespacedSecret({
      namespace: "team-b",
      name: "source-kubeconfig",
      body: {
        metadata: { name: "source-kubeconfig", labels: { rotated: "1" } },
        stringData: { value: content },
      },
    });
    await eventually(() => contexts.get("team-b/source") !== rotatedBefore, {
      timeoutMs: 60_000,
      description: "the rotated provider's context to be rebuilt on its next pass",
    });
    assert.equal(contexts.get("team-b/other"), otherBefore, "the other provider's context is untouched");
    assert.ok(
      contexts.get("team-b/source")!.watchManager.serves({ namespace: "team-b", name: "mirror" }),
      "the rebuilt context serves the targets the old one served",
    );
  });

  it("refuses a kubeconfig that names a file on the operator's disk, and a missing Secret, in status", async () => {
    const { providers } = clients(kc);
    operator ??= startOperator(kc);
    const core = kc.makeApiClient(CoreV1Api);
    const fileKubeconfig = [
      "apiVersion: v1",
      "kind: Config",
      "clusters: [{name: c, cluster: {server: 'https://example.invalid', certificate-authority: /etc/passwd}}]",
      "users: [{name: u, user: {token: abc}}]",
      "contexts: [{name: x, context: {cluster: c, user: u}}]",
      "current-context: x",
    ].join("\n");
    await core.createNamespacedSecret({
      namespace: "team-b",
      body: { metadata: { name: "unsafe" }, stringData: { value: fileKubeconfig } },
    });
    for (const [name, secret] of [
      ["unsafe", "unsafe"],
      ["missing", "nope"],
    ] as const) {
      await providers.apply(
        {
          apiVersion: "configbutler.ai/v1alpha3",
          kind: "KubeProvider",
          metadata: { name, namespace: "team-b" },
          spec: { secretRef: { name: secret } },
        },
        "test",
      );
    }
    const unsafe = await conditionOf(providers, "team-b", "unsafe", "Stalled", "True", "UnsafeKubeconfig");
    assert.match(condition(unsafe, "Ready")?.message ?? "", /certificate-authority/);
    const missing = await conditionOf(
      providers,
      "team-b",
      "missing",
      "Reconciling",
      "True",
      "SecretNotFound",
    );
    assert.equal(condition(missing, "Ready")?.status, "Unknown");
  });
});
