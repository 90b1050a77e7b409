import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, KubernetesObjectApi, type KubeConfig } from "@kubernetes/client-node";
import { clusterWatchRules, watchRules, type WatchRule } from "../../../generated/v1alpha3/index.ts";
import { watchEventsExcluded } from "../../../internal/telemetry/instruments.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { GitServer } from "../../support/gitserver.ts";
import { kubectlOk } from "../../support/kubectl.ts";
import { installCrds } from "../../support/manifests.ts";
import { applyMirror, mirrorFieldManager } from "../../support/mirror.ts";
import { startOwnedOperator, type RunningOperator } from "../../support/operator.ts";
import { shippedOperatorIdentity } from "../../support/shippedrbac.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";
import { eventually } from "../../support/wait.ts";
import { condition, conditionOf } from "../controllers/helpers.ts";

const namespace = "apps";
const user = { username: "gitops", password: "s3cret" };
const folder = "clusters/dev/configs";

/** The WatchRule "configs" feeding the GitTarget "configs", with what it keeps out. */
const configsRule = (exclusions: Partial<WatchRule["spec"]>): WatchRule => ({
  apiVersion: "configbutler.ai/v1alpha3",
  kind: "WatchRule",
  metadata: { name: "configs", namespace },
  spec: {
    gitTargetRef: { name: "configs" },
    rules: [{ apiGroups: [""], resources: ["configmaps"] }],
    ...exclusions,
  },
});

/** How many events and entries the GitTarget "configs" kept out for `reason`. */
async function excludedCount(reason: string): Promise<number> {
  const metric = await watchEventsExcluded.get();
  return metric.values
    .filter((v) => v.labels.gittarget_name === "configs" && v.labels.reason === reason)
    .reduce((sum, v) => sum + v.value, 0);
}

describe("who to ignore: a rule keeps some writes and objects out of Git", () => {
  let plane: ControlPlane;
  let git: GitServer;
  let kc: KubeConfig;
  let core: CoreV1Api;
  let operator: RunningOperator;
  let files: string;
  let marks = 0;
  const show = (name: string) =>
    git
      .gitIn("state", ["show", `main:${folder}/${namespace}/configmaps/${name}.yaml`])
      .catch(() => undefined);
  /** Applies a ConfigMap's data server-side, as `manager`, with kubectl. */
  const apply = (manager: string, name: string, data: Record<string, string>) => {
    const file = join(files, `${name}-${manager}-${++marks}.json`);
    writeFileSync(
      file,
      JSON.stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace }, data }),
    );
    return kubectlOk(
      plane,
      "apply",
      "--server-side",
      "--force-conflicts",
      `--field-manager=${manager}`,
      "-f",
      file,
    );
  };
  /**
   * A write by someone not excluded, to a marker ConfigMap, waited for in Git: the collection's
   * items reach the folder in order, so whatever an earlier write routed is in Git by then.
   */
  const barrier = async () => {
    const value = `m${++marks}`;
    await apply("human", "marker", { at: value });
    await eventually(async () => (await show("marker"))?.includes(value), {
      timeoutMs: 60_000,
      description: `the marker at ${value} in Git`,
    });
  };

  before(async () => {
    [plane, git] = await Promise.all([ControlPlane.start(), GitServer.start({ users: [user] })]);
    kc = plane.kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    await installCrds(kc);
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    // What kube-controller-manager puts in every namespace (none runs here): in the snapshot.
    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "kube-root-ca.crt" }, data: { "ca.crt": "a CA bundle" } },
    });
    const url = await git.createRepository("state");
    await applyMirror(kc, namespace, url, user, [
      { name: "configs", path: folder, rules: configsRule({}).spec.rules, prune: "Always" },
    ]);
    await watchRules(kc).apply(
      configsRule({ excludeFieldManagers: ["image-bot"], excludeObjects: ["kube-root-ca.crt", "*-cache"] }),
      mirrorFieldManager,
    );
    files = makeOwnedTempDir("exclusions");
    // As a user installs it: its ServiceAccount under config/rbac's roles, not the admin.
    operator = startOwnedOperator(
      (await shippedOperatorIdentity(plane, kc)).kubeConfig,
      "exclusions-workers",
      {
        inClusterKubeProviders: [`${namespace}/self`],
      },
    );
  });
  after(async () => {
    await operator?.stop();
    await git?.close();
    await plane?.stop();
    if (files) removeOwnedTempDir(files);
  });

  it("a rule with exclusions it can judge is Ready, and says so in ExclusionsEffective", async () => {
    const rule = await conditionOf(watchRules(kc), namespace, "configs", "Ready", "True", undefined, 60_000);
    assert.equal(condition(rule, "ExclusionsEffective")?.status, "True");
  });

  it("a write by an excluded field manager is not mirrored; the next write by anyone else is", async () => {
    await apply("human", "app", { replicas: "1" });
    await eventually(async () => (await show("app"))?.includes("replicas"), {
      timeoutMs: 60_000,
      description: "the ConfigMap in Git",
    });
    const before = await excludedCount("field_manager");
    await apply("image-bot", "app", { image: "app:v2" });
    await eventually(async () => (await excludedCount("field_manager")) > before, {
      description: "the image-bot write counted as excluded",
    });
    await barrier();
    assert.doesNotMatch((await show("app"))!, /app:v2/, "the image-bot write is not mirrored");

    // The person's next write mirrors the object as it now is, the excluded change included.
    await apply("human", "app", { replicas: "3" });
    const mirrored = await eventually(
      async () => {
        const text = await show("app");
        return text?.includes('replicas: "3"') && text;
      },
      { timeoutMs: 60_000, description: "the person's write in Git" },
    );
    assert.match(mirrored, /image: app:v2/, "the object's full state, the excluded change in it");
  });

  it("excludeObjects keeps kube-root-ca.crt out of the snapshot and its writes, and leaves a document already in Git alone", async () => {
    await barrier();
    assert.equal(await show("kube-root-ca.crt"), undefined, "kept out of the snapshot");
    await apply("kube-controller-manager", "kube-root-ca.crt", { "ca.crt": "a rotated bundle" });
    await barrier();
    assert.equal(await show("kube-root-ca.crt"), undefined, "kept out of a write");
    assert.ok((await excludedCount("object")) >= 2, "the snapshot entry and the write are counted");

    // Nothing excluded: the replay that follows the change brings kube-root-ca.crt in without a write.
    await watchRules(kc).apply(configsRule({ excludeFieldManagers: ["image-bot"] }), mirrorFieldManager);
    await apply("human", "session-cache", { size: "1" });
    for (const name of ["session-cache", "kube-root-ca.crt"])
      await eventually(async () => (await show(name)) !== undefined, {
        timeoutMs: 60_000,
        description: `${name} in Git while nothing excludes it`,
      });

    // Excluded again: the replay keeps both out, and under prune.mode Always its sweep leaves their documents.
    const replayed = await excludedCount("object");
    await watchRules(kc).apply(
      configsRule({ excludeFieldManagers: ["image-bot"], excludeObjects: ["kube-root-ca.crt", "*-cache"] }),
      mirrorFieldManager,
    );
    await eventually(async () => (await excludedCount("object")) >= replayed + 2, {
      description: "the replay's two entries kept out",
    });
    await barrier();
    assert.ok(await show("session-cache"), "not swept");
    assert.ok(await show("kube-root-ca.crt"), "not swept");

    const written = await excludedCount("object");
    await apply("human", "session-cache", { size: "2" });
    await core.deleteNamespacedConfigMap({ namespace, name: "kube-root-ca.crt" });
    await eventually(async () => (await excludedCount("object")) >= written + 2, {
      description: "the cache's write and the CA's delete counted as excluded",
    });
    await barrier();
    assert.match((await show("session-cache"))!, /size: "1"/, "an excluded object's document is not updated");
    assert.ok(await show("kube-root-ca.crt"), "nor removed by its object's delete");
  });

  it("excludeUsers with attribution off is said in the rule's status, not silently ignored", async () => {
    await watchRules(kc).apply(
      configsRule({
        excludeFieldManagers: ["image-bot"],
        excludeUsers: ["system:serviceaccount:ci:deployer"],
      }),
      mirrorFieldManager,
    );
    const rule = await conditionOf(
      watchRules(kc),
      namespace,
      "configs",
      "ExclusionsEffective",
      "False",
      "AttributionOff",
    );
    assert.match(condition(rule, "ExclusionsEffective")!.message, /attribution is off/);
    // Ready and Stalled follow once the rule's other checks are judged, maybe a pass later.
    const stalled = await conditionOf(
      watchRules(kc),
      namespace,
      "configs",
      "Ready",
      "False",
      undefined,
      60_000,
    );
    assert.equal(condition(stalled, "Stalled")?.status, "True");
    await watchRules(kc).apply(configsRule({ excludeFieldManagers: ["image-bot"] }), mirrorFieldManager);
    await conditionOf(watchRules(kc), namespace, "configs", "Ready", "True");
  });

  it("admission refuses an exclusion pattern that is malformed or keeps everything out", async () => {
    const objects = KubernetesObjectApi.makeApiClient(kc);
    const refused = async (object: object, message: string) => {
      const err = await objects.create(object as never).then(
        () => assert.fail("the API server accepted an exclusion it should refuse"),
        (e: unknown) => e as { code?: number; body?: unknown },
      );
      assert.equal(err.code, 422);
      assert.match(JSON.stringify(err.body), new RegExp(message));
    };
    const named = (name: string, spec: Partial<WatchRule["spec"]>) => ({
      ...configsRule(spec),
      metadata: { name, namespace },
    });
    await refused(named("bad-1", { excludeObjects: ["a/b/c"] }), "one '/' at most");
    await refused(named("bad-2", { excludeObjects: ["*/*"] }), "must not match every object");
    await refused(named("bad-3", { excludeFieldManagers: ["*"] }), "must name a field manager");
    await refused(
      {
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "ClusterWatchRule",
        metadata: { name: "bad-4" },
        spec: {
          gitTargetRef: { name: "configs", namespace },
          rules: [{ resources: ["namespaces"] }],
          excludeObjects: ["kube-system/x"],
        },
      },
      "cluster-scoped objects have no namespace",
    );
    assert.ok(await clusterWatchRules(kc).list(), "the ClusterWatchRule CRD is served");
  });
});
