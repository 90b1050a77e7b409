import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { CoreV1Api } from "@kubernetes/client-node";
import {
  AppsV1Api,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
  type V1Deployment,
} from "@kubernetes/client-node";
import { parse } from "yaml";
import { writesDropped } from "../../../internal/telemetry/instruments.ts";
import type { GitServer } from "../../support/gitserver.ts";
import {
  folderBranches,
  startMirrorEnvironment,
  type FolderBranches,
  type MirrorEnvironment,
} from "../../support/mirrorenv.ts";
import { eventually } from "../../support/wait.ts";
import * as fixtures from "./fixtures/manifestfolders.ts";
import { clients, condition, conditionOf } from "./helpers.ts";

const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
// Each scenario mirrors its own namespace into its own branch of one repository, so the folders
// and their commits never mix.
const scenarios = ["hand", "bundle", "kustomized", "twokust", "declared", "images", "refused", "tokens"];

describe("the manifest-aware writer edits a repository the way a careful person would", () => {
  let env: MirrorEnvironment;
  let git: GitServer;
  let kc: KubeConfig;
  let core: CoreV1Api;
  let apps: AppsV1Api;

  let show: FolderBranches["show"], head: FolderBranches["head"], inGit: FolderBranches["inGit"];
  let settled: FolderBranches["settled"], mirror: FolderBranches["seed"];

  before(async () => {
    env = await startMirrorEnvironment(scenarios);
    ({ git, kc, core } = env);
    ({ show, head, inGit, settled, seed: mirror } = folderBranches(env));
    apps = kc.makeApiClient(AppsV1Api);
  });
  after(() => env?.stop());

  it("editing one field of a commented, hand-formatted Deployment changes exactly one line in git diff", async () => {
    const path = "clusters/dev/hand/deployment.yaml";
    await apps.createNamespacedDeployment({
      namespace: "hand",
      body: parse(fixtures.handFormattedDeployment) as V1Deployment,
    });
    await mirror(
      "hand",
      { [path]: fixtures.handFormattedDeployment },
      {
        path: "clusters/dev/hand",
        rules: [{ apiGroups: ["apps"], resources: ["deployments"] }],
      },
    );
    // The snapshot adds what the API server defaulted; the person's lines all survive it.
    const snapshot = await inGit("hand", path, (c) => c.includes("revisionHistoryLimit"), "the snapshot");
    for (const line of fixtures.handFormattedDeployment.split("\n")) assert.ok(snapshot.includes(line), line);
    const before = await settled("hand");

    await apps.patchNamespacedDeployment(
      { namespace: "hand", name: "web", body: { spec: { replicas: 3 } } },
      mergePatch,
    );
    await inGit("hand", path, (c) => c.includes("replicas: 3"), "the scaled Deployment");
    const diff = await git.gitIn("state", ["diff", "--unified=0", before, "hand", "--", path]);
    const changed = diff.split("\n").filter((l) => /^[-+][^-+]/.test(l));
    assert.deepEqual(changed, ["-    replicas: 2", "+    replicas: 3"]);
  });

  it("a ConfigMap in a three-document file is updated and deleted without touching its siblings", async () => {
    const path = "clusters/dev/bundle/bundle.yaml";
    for (const doc of fixtures.bundle.split("---\n")) {
      const { metadata, data } = parse(doc) as { metadata: { name: string }; data: Record<string, string> };
      await core.createNamespacedConfigMap({ namespace: "bundle", body: { metadata, data } });
    }
    await mirror(
      "bundle",
      { [path]: fixtures.bundle },
      {
        path: "clusters/dev/bundle",
        rules: [{ apiGroups: [""], resources: ["configmaps"] }],
      },
    );
    await settled("bundle");
    assert.equal(
      await show("bundle", path),
      fixtures.bundle,
      "a snapshot equal to the folder changes nothing",
    );

    await core.patchNamespacedConfigMap(
      { namespace: "bundle", name: "beta", body: { data: { mode: "fast" } } },
      mergePatch,
    );
    await inGit(
      "bundle",
      path,
      (c) => c === fixtures.bundle.replace("  mode: slow\n", "  mode: fast\n"),
      "beta updated alone",
    );

    await core.deleteNamespacedConfigMap({ namespace: "bundle", name: "beta" });
    const [first, , third] = fixtures.bundle.split("---\n");
    await inGit("bundle", path, (c) => c === `${first}---\n${third}`, "beta removed alone");
  });

  it("a new object in a folder with one kustomization.yaml lands beside it and is listed in resources", async () => {
    const folder = "clusters/dev/kustomized";
    await mirror(
      "kustomized",
      {
        [`${folder}/kustomization.yaml`]: fixtures.kustomizationWithComment,
        [`${folder}/settings.yaml`]: fixtures.settings("kustomized"),
      },
      { path: folder, rules: [{ apiGroups: [""], resources: ["configmaps"] }] },
    );
    await core.createNamespacedConfigMap({
      namespace: "kustomized",
      body: { metadata: { name: "fresh" }, data: { a: "b" } },
    });
    await inGit(
      "kustomized",
      `${folder}/fresh-configmap.yaml`,
      (c) => c.includes("a: b"),
      "the new ConfigMap beside the root",
    );
    const kustomization = await inGit(
      "kustomized",
      `${folder}/kustomization.yaml`,
      (c) => c.includes("- fresh-configmap.yaml"),
      "the resources entry",
    );
    assert.ok(
      kustomization.startsWith(fixtures.kustomizationWithComment),
      "comments and entries kept, one line added",
    );
    const target = await conditionOf(
      clients(kc).targets,
      "kustomized",
      "kustomized",
      "Ready",
      "True",
      undefined,
      60_000,
    );
    assert.equal(target.status?.placement?.source, "KustomizeRoot");
    assert.equal(target.status?.placement?.kustomizeRoot, `${folder}/kustomization.yaml`);
    const pushed = await git.branchHead("state", "kustomized");
    await eventually(
      async () =>
        (await clients(kc).targets.get("kustomized", "kustomized"))?.status?.placement?.commit === pushed,
      { description: "status.placement.commit at the pushed commit, once the push landed" },
    );
  });

  it("with two kustomizations it falls back to the built-in path", async () => {
    const folder = "clusters/dev/twokust";
    await mirror(
      "twokust",
      {
        [`${folder}/base/kustomization.yaml`]: "resources:\n  - settings.yaml\n",
        [`${folder}/base/settings.yaml`]: fixtures.settings("twokust"),
        [`${folder}/overlay/kustomization.yaml`]: "resources:\n  - ../base\n",
      },
      { path: folder, rules: [{ apiGroups: [""], resources: ["configmaps"] }] },
    );
    await core.createNamespacedConfigMap({
      namespace: "twokust",
      body: { metadata: { name: "fresh" }, data: { a: "b" } },
    });
    await inGit(
      "twokust",
      `${folder}/twokust/configmaps/fresh.yaml`,
      (c) => c.includes("a: b"),
      "the built-in path",
    );
    assert.equal(
      await show("twokust", `${folder}/base/kustomization.yaml`),
      "resources:\n  - settings.yaml\n",
    );
  });

  it("spec.placement templates win over both", async () => {
    const folder = "clusters/dev/declared";
    await mirror(
      "declared",
      {
        [`${folder}/kustomization.yaml`]: fixtures.kustomizationWithComment,
        [`${folder}/settings.yaml`]: fixtures.settings("declared"),
      },
      {
        path: folder,
        rules: [{ apiGroups: [""], resources: ["configmaps", "serviceaccounts"] }],
        placement: { byType: { "v1/configmaps": "config/{name}.yaml" }, default: "{resource}/{name}.yaml" },
      },
    );
    await core.createNamespacedConfigMap({
      namespace: "declared",
      body: { metadata: { name: "fresh" }, data: { a: "b" } },
    });
    await core.createNamespacedServiceAccount({
      namespace: "declared",
      body: { metadata: { name: "robot" } },
    });
    await inGit("declared", `${folder}/config/fresh.yaml`, (c) => c.includes("a: b"), "byType's path");
    await inGit(
      "declared",
      `${folder}/serviceaccounts/robot.yaml`,
      (c) => c.includes("name: robot"),
      "default's path",
    );
    assert.equal(await show("declared", `${folder}/kustomization.yaml`), fixtures.kustomizationWithComment);
  });

  it("kubectl set image on a Deployment whose image comes from an images: override rewrites the override, and the base manifest is byte-identical", async () => {
    const folder = "clusters/dev/images";
    const live = parse(fixtures.imagesBase) as V1Deployment;
    live.spec!.template.spec!.containers[0]!.image = "nginx:1.25"; // as kustomize renders it
    await apps.createNamespacedDeployment({ namespace: "images", body: live });
    await mirror(
      "images",
      {
        [`${folder}/kustomization.yaml`]: fixtures.imagesKustomization,
        [`${folder}/deployment.yaml`]: fixtures.imagesBase,
      },
      { path: folder, rules: [{ apiGroups: ["apps"], resources: ["deployments"] }] },
    );
    // The snapshot writes the defaults into the base, and keeps its own image: the render matches live.
    const base = await inGit(
      "images",
      `${folder}/deployment.yaml`,
      (c) => c.includes("revisionHistoryLimit"),
      "the snapshot",
    );
    assert.match(base, /image: nginx:1\.24/);
    await settled("images");

    await apps.patchNamespacedDeployment(
      {
        namespace: "images",
        name: "api",
        body: { spec: { template: { spec: { containers: [{ name: "api", image: "nginx:1.27" }] } } } },
      },
      setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch),
    );
    await inGit(
      "images",
      `${folder}/kustomization.yaml`,
      (c) => c === fixtures.imagesKustomization.replace('newTag: "1.25"', 'newTag: "1.27"'),
      "the override rewritten",
    );
    assert.equal(
      await show("images", `${folder}/deployment.yaml`),
      base,
      "the base manifest keeps its bytes",
    );
  });

  it("a folder with a secretGenerator is refused with a clear condition and nothing is committed; removing it clears the refusal", async () => {
    const folder = "clusters/dev/refused";
    await core.createNamespacedConfigMap({
      namespace: "refused",
      body: { metadata: { name: "waiting" }, data: { a: "b" } },
    });
    await mirror(
      "refused",
      {
        [`${folder}/kustomization.yaml`]: fixtures.secretGeneratorKustomization,
        [`${folder}/settings.yaml`]: fixtures.settings("refused"),
      },
      { path: folder, rules: [{ apiGroups: [""], resources: ["configmaps"] }] },
    );
    const seeded = await head("refused");
    const { targets } = clients(kc);
    const refused = await conditionOf(
      targets,
      "refused",
      "refused",
      "GitPathAccepted",
      "False",
      "UnsupportedContent",
      60_000,
    );
    const message = condition(refused, "GitPathAccepted")?.message ?? "";
    assert.match(message, /clusters\/dev\/refused\/kustomization\.yaml/);
    assert.match(message, /secretGenerator/);
    assert.equal(condition(refused, "Stalled")?.status, "True");
    assert.equal(await head("refused"), seeded, "nothing committed into a refused folder");

    await git.pushForeignCommit("state", {
      branch: "refused",
      files: { [`${folder}/kustomization.yaml`]: "resources:\n  - settings.yaml\n" },
      message: "Drop the secretGenerator",
    });
    await conditionOf(targets, "refused", "refused", "GitPathAccepted", "True", undefined, 60_000);
    await inGit(
      "refused",
      `${folder}/waiting-configmap.yaml`,
      (c) => c.includes("a: b"),
      "what waited, written once accepted",
    );
  });

  it("a ${VAR} token substituted by an applier is never overwritten by the live value", async () => {
    const path = "clusters/dev/tokens/cluster-info.yaml";
    await core.createNamespacedConfigMap({
      namespace: "tokens",
      body: { metadata: { name: "cluster-info" }, data: { cluster: "prod-eu", region: "eu-west-1" } },
    });
    await mirror(
      "tokens",
      { [path]: fixtures.tokenConfigMap },
      {
        path: "clusters/dev/tokens",
        rules: [{ apiGroups: [""], resources: ["configmaps"] }],
      },
    );
    const { targets } = clients(kc);
    const stalled = await conditionOf(
      targets,
      "tokens",
      "tokens",
      "RenderMatchesLive",
      "False",
      "RenderDoesNotMatchLive",
      60_000,
    );
    assert.match(
      condition(stalled, "RenderMatchesLive")?.message ?? "",
      /cluster-info data\.cluster: the folder renders "\$\{CLUSTER_NAME\}" but live holds "prod-eu"/,
    );
    assert.equal(condition(stalled, "Stalled")?.status, "True");

    const dropped = async () =>
      (await writesDropped.get()).values.find(
        (v) => v.labels.reason === "render_fidelity_diverged" && v.labels.gittarget_name === "tokens",
      )?.value ?? 0;
    const droppedBefore = await dropped();
    await core.patchNamespacedConfigMap(
      { namespace: "tokens", name: "cluster-info", body: { data: { region: "us-east-1" } } },
      mergePatch,
    );
    await eventually(async () => (await dropped()) > droppedBefore, {
      description: "the live write dropped",
    });
    await settled("tokens");
    assert.equal(
      await show("tokens", path),
      fixtures.tokenConfigMap,
      "the token, and everything else, as the folder had it",
    );
  });
});
