// Values kustomize cannot carry, against a real operator and the pinned kustomize: a ConfigMap
// value holding NEL (which `kustomize build` hands on as a space) or DEL (which fails the whole
// folder's build, so Flux applies nothing of it) is not written into a folder kustomize builds.
// The object is skipped, the rest of the folder flows and still builds, and the GitTarget names
// the object, the field and the character until the value is one kustomize carries.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import { EventsV1Api, PatchStrategy, setHeaderOptions, type CoreV1Api } from "@kubernetes/client-node";
import { placementRefusals } from "../../../internal/telemetry/instruments.ts";
import { kustomizeBinary } from "../../support/binaries.ts";
import { folderBranches, startMirrorEnvironment, type MirrorEnvironment } from "../../support/mirrorenv.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";
import { eventually } from "../../support/wait.ts";
import { clients, conditionOf } from "./helpers.ts";

const run = promisify(execFile);
const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
const namespace = "kz";
const folder = "clusters/prod/kz";
const settingsFile = `${folder}/settings.yaml`;
const kustomization = `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - settings.yaml\n`;
const configMap = (name: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: ${namespace}\ndata:\n  level: info\n`;

/** How many writes the operator in this process refused as not representable. */
const refusedCount = async () =>
  (await placementRefusals.get()).values
    .filter((v) => v.labels.reason === "value_not_representable")
    .reduce((sum, v) => sum + v.value, 0);

describe("values kustomize cannot carry, in a folder kustomize builds", () => {
  let env: MirrorEnvironment;
  let core: CoreV1Api;
  let branches: ReturnType<typeof folderBranches>;

  /** The GitTarget's folder accepted, every change written. */
  const accepted = () =>
    conditionOf(
      clients(env.kc).targets,
      namespace,
      namespace,
      "GitPathAccepted",
      "True",
      "Succeeded",
      60_000,
    );
  /** `kustomize build` of the folder as the branch holds it: its output, or why it failed. */
  const build = async () => {
    const dir = makeOwnedTempDir("kz-build");
    try {
      for (const path of [`${folder}/kustomization.yaml`, settingsFile]) {
        const content = (await branches.show(namespace, path)) ?? "";
        mkdirSync(dirname(join(dir, path)), { recursive: true });
        writeFileSync(join(dir, path), content);
      }
      const { stdout } = await run(kustomizeBinary(), ["build", join(dir, folder)]);
      return stdout;
    } finally {
      removeOwnedTempDir(dir);
    }
  };

  before(async () => {
    env = await startMirrorEnvironment([namespace]);
    core = env.core;
    branches = folderBranches(env);
    for (const name of ["settings", "other"])
      await core.createNamespacedConfigMap({
        namespace,
        body: { metadata: { name }, data: { level: "info" } },
      });
    await branches.seed(
      namespace,
      {
        [`${folder}/kustomization.yaml`]: kustomization,
        [settingsFile]: `${configMap("settings")}---\n${configMap("other")}`,
      },
      { path: folder, rules: [{ apiGroups: [""], resources: ["configmaps"] }] },
    );
    await accepted();
  });
  after(() => env?.stop());

  it("a ConfigMap value kustomize would change is not written into a kustomize folder, the folder still builds, and the GitTarget names the object and the key", async () => {
    const refusedBefore = await refusedCount();
    for (const [name, note] of [
      ["settings", "one\u0085two"],
      ["other", "written"],
    ] as const)
      await core.patchNamespacedConfigMap({ namespace, name, body: { data: { note } } }, mergePatch);
    // The other object's edit lands: the folder flows.
    await branches.inGit(
      namespace,
      settingsFile,
      (c) => c.includes("note: written"),
      "the other edit in Git",
    );
    const target = await conditionOf(
      clients(env.kc).targets,
      namespace,
      namespace,
      "GitPathAccepted",
      "False",
      "ValueNotRepresentable",
      60_000,
    );
    const message = target.status?.conditions?.find((c) => c.type === "GitPathAccepted")?.message ?? "";
    assert.match(message, /ConfigMap kz\/settings: data\.note holds U\+0085/);
    assert.doesNotMatch(
      (await branches.show(namespace, settingsFile)) ?? "",
      /one/,
      "the value is not written",
    );
    // The folder as Git holds it builds, and carries the other edit.
    assert.match(await build(), /note: written/);
    assert.ok((await refusedCount()) > refusedBefore, "counted in placement_refusals_total");
    const events = await eventually(
      async () =>
        (await env.kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace })).items.filter(
          (e) => e.reason === "ValueNotRepresentable" && e.regarding?.kind === "GitTarget",
        ),
      { timeoutMs: 30_000, description: "a ValueNotRepresentable Event on the GitTarget" },
    );
    assert.equal(events[0]?.type, "Warning");
  });

  it("the object is written once its value is representable again", async () => {
    await core.patchNamespacedConfigMap(
      { namespace, name: "settings", body: { data: { note: "one two" } } },
      mergePatch,
    );
    await branches.inGit(
      namespace,
      settingsFile,
      (c) => c.includes("note: one two"),
      "the fixed value in Git",
    );
    await accepted();
    assert.match(await build(), /note: one two/);
  });
});
