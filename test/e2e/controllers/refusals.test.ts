import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { PatchStrategy, setHeaderOptions, type CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";
import type { GitServer } from "../../support/gitserver.ts";
import {
  folderBranches,
  startMirrorEnvironment,
  type FolderBranches,
  type MirrorEnvironment,
} from "../../support/mirrorenv.ts";
import { eventually } from "../../support/wait.ts";
import * as fixtures from "./fixtures/refusalfolders.ts";
import { clients, condition, conditionOf } from "./helpers.ts";

const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
const configMaps = [{ apiGroups: [""], resources: ["configmaps"] }];

describe("the acceptance gate accepts what kustomize means and reports every problem at once", () => {
  let env: MirrorEnvironment;
  let git: GitServer;
  let kc: KubeConfig;
  let core: CoreV1Api;

  let show: FolderBranches["show"], head: FolderBranches["head"], mirror: FolderBranches["seed"];
  /** Creates, in `namespace`, every ConfigMap of a multi-document file as it is written. */
  const createConfigMaps = async (namespace: string, content: string) => {
    for (const doc of parseAllDocuments(content)) {
      const { metadata, data } = doc.toJS() as { metadata: { name: string }; data: Record<string, string> };
      await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: metadata.name }, data } });
    }
  };

  before(async () => {
    env = await startMirrorEnvironment(["targeted", "problems"]);
    ({ git, kc, core } = env);
    ({ show, head, seed: mirror } = folderBranches(env));
  });
  after(() => env?.stop());

  it("a strategic-merge patch with a target selector is accepted", async () => {
    const folder = "clusters/prod/targeted";
    const files: Record<string, string> = {
      [`${folder}/kustomization.yaml`]: fixtures.targetedKustomization,
      [`${folder}/release.yaml`]: fixtures.release,
      [`${folder}/values-production.yaml`]: fixtures.productionValues,
      [`${folder}/settings.yaml`]: fixtures.targetedSettings,
    };
    await createConfigMaps("targeted", fixtures.targetedSettings);
    await mirror("targeted", files, { path: folder, rules: configMaps });
    const { targets } = clients(kc);
    const accepted = await conditionOf(
      targets,
      "targeted",
      "targeted",
      "GitPathAccepted",
      "True",
      "Succeeded",
      60_000,
    );
    assert.doesNotMatch(JSON.stringify(accepted.status?.conditions), /JSON6902/);

    await core.patchNamespacedConfigMap(
      { namespace: "targeted", name: "podinfo-logging", body: { data: { level: "debug" } } },
      mergePatch,
    );
    const settings = `${folder}/settings.yaml`;
    await eventually(async () => (await show("targeted", settings))?.includes("level: debug"), {
      timeoutMs: 60_000,
      description: "the live edit written into the accepted folder",
    });
    assert.equal(
      await show("targeted", settings),
      fixtures.targetedSettings.replace("level: info", "level: debug"),
      "one value changed, its comment and the file's formatting kept",
    );
    for (const path of ["kustomization.yaml", "release.yaml", "values-production.yaml"]) {
      assert.equal(await show("targeted", `${folder}/${path}`), files[`${folder}/${path}`], path);
    }
  });

  it("a folder with three problems lists all three", async () => {
    const folder = "clusters/prod/problems";
    await core.createNamespacedConfigMap({
      namespace: "problems",
      body: { metadata: { name: "waiting" }, data: { a: "b" } },
    });
    await mirror(
      "problems",
      {
        [`${folder}/kustomization.yaml`]: fixtures.problemsKustomization,
        [`${folder}/settings.yaml`]: fixtures.problemsSettings,
        [`${folder}/old-settings.yaml`]: fixtures.oldSettings,
        [`${folder}/values.yaml`]: fixtures.helmValues,
      },
      { path: folder, rules: configMaps },
    );
    const seeded = await head("problems");
    const { targets } = clients(kc);
    const refused = await conditionOf(
      targets,
      "problems",
      "problems",
      "GitPathAccepted",
      "False",
      "UnsupportedContent",
      60_000,
    );
    const message = condition(refused, "GitPathAccepted")?.message ?? "";
    assert.match(message, /^3 problems keep the operator from writing this folder/, message);
    assert.match(message, /1\. clusters\/prod\/problems\/kustomization\.yaml has secretGenerator: remove it/);
    assert.match(
      message,
      /2\. clusters\/prod\/problems\/settings\.yaml has duplicate identity \(ConfigMap\/problems\/legacy, also in clusters\/prod\/problems\/old-settings\.yaml\)/,
    );
    assert.match(message, /3\. clusters\/prod\/problems\/values\.yaml has non-KRM document \(document 0\)/);
    assert.match(message, /list it in \.gittargetignore/);
    const render = condition(refused, "RenderMatchesLive");
    assert.equal(render?.reason, "UnsupportedContent", JSON.stringify(render));
    assert.doesNotMatch(render?.message ?? "", /replaying/);
    assert.equal(await head("problems"), seeded, "nothing committed into a refused folder");

    await git.pushForeignCommit("state", {
      branch: "problems",
      files: {
        [`${folder}/kustomization.yaml`]: "resources:\n  - settings.yaml\n",
        [`${folder}/old-settings.yaml`]: null,
        [`${folder}/.gittargetignore`]: "# Helm values, not manifests\nvalues.yaml\n",
      },
      message: "Fix the three problems in one commit",
    });
    await conditionOf(targets, "problems", "problems", "GitPathAccepted", "True", undefined, 60_000);
    await eventually(
      async () => (await show("problems", `${folder}/waiting-configmap.yaml`))?.includes("a: b"),
      {
        timeoutMs: 60_000,
        description: "what waited, written once the one commit cleared every problem",
      },
    );
  });
});
