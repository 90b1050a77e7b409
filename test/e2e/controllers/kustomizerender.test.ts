// The folder as rendered, through the real `kustomize build` (the pinned binary make kustomize
// builds): an overlay's read-only base is judged with the overlay's patches applied, and an
// overlay kustomize cannot build is refused with kustomize's own message.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import {
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
  type CoreV1Api,
  type V1ConfigMap,
} from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";
import { kustomizeBinary } from "../../support/binaries.ts";
import type { GitServer } from "../../support/gitserver.ts";
import { applyMirror } from "../../support/mirror.ts";
import {
  mirrorUser as user,
  startMirrorEnvironment,
  type MirrorEnvironment,
} from "../../support/mirrorenv.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";
import { clients, condition, conditionOf } from "./helpers.ts";

const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
const scenarios = ["overlay", "broken"];

/** A base with comments and hand formatting, and a production overlay that patches it. */
function overlayFolder(namespace: string, base = "../base"): Record<string, string> {
  return {
    "apps/base/kustomization.yaml": "# The shared base.\nresources:\n  - settings.yaml   # one ConfigMap\n",
    "apps/base/settings.yaml": [
      "# Settings every environment starts from.",
      "apiVersion: v1",
      "kind: ConfigMap",
      "metadata:",
      "  name: settings",
      `  namespace: ${namespace}`,
      "data:",
      '  mode:  "base"      # production patches this',
      "  color: blue",
      "",
    ].join("\n"),
    "apps/production/kustomization.yaml": [
      "# Production: the base, with its mode patched.",
      "resources:",
      `  - ${base}`,
      "patches:",
      "  - path: settings-patch.yaml",
      "",
    ].join("\n"),
    "apps/production/settings-patch.yaml": [
      "apiVersion: v1",
      "kind: ConfigMap",
      "metadata:",
      "  name: settings",
      `  namespace: ${namespace}`,
      "data:",
      "  mode: production",
      "",
    ].join("\n"),
  };
}

/** What `kustomize build` renders from `files` at `folder`: what Flux or Argo CD would apply. */
function kustomizeBuild(files: Record<string, string>, folder: string): V1ConfigMap[] {
  const dir = makeOwnedTempDir("overlay");
  try {
    for (const [path, content] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), content);
    }
    const rendered = execFileSync(kustomizeBinary(), ["build", join(dir, folder)], { encoding: "utf8" });
    return parseAllDocuments(rendered).map((doc) => doc.toJS() as V1ConfigMap);
  } finally {
    removeOwnedTempDir(dir);
  }
}

describe("a kustomize folder is judged as kustomize renders it", () => {
  let env: MirrorEnvironment;
  let git: GitServer;
  let kc: KubeConfig;
  let core: CoreV1Api;
  let url: string;

  const mirror = async (branch: string, files: Record<string, string>) => {
    await git.pushForeignCommit("state", {
      branch,
      startFrom: "main",
      files,
      message: `The ${branch} folder, by hand`,
    });
    await applyMirror(
      kc,
      branch,
      url,
      user,
      [{ name: branch, path: "apps/production", rules: [{ apiGroups: [""], resources: ["configmaps"] }] }],
      branch,
    );
  };

  before(async () => {
    env = await startMirrorEnvironment(scenarios);
    ({ git, kc, core, url } = env);
  });
  after(() => env?.stop());

  it("an overlay whose rendered output equals live is accepted", async () => {
    const files = overlayFolder("overlay");
    for (const object of kustomizeBuild(files, "apps/production"))
      await core.createNamespacedConfigMap({ namespace: "overlay", body: object });
    await mirror("overlay", files);
    const pushed = await git.branchHead("state", "overlay");

    const { targets } = clients(kc);
    // RenderMatchesLive is reported with the snapshot's own outcome, so by now it has been judged.
    await conditionOf(targets, "overlay", "overlay", "RenderMatchesLive", "True", undefined, 60_000);
    const target = await conditionOf(targets, "overlay", "overlay", "Ready", "True", undefined, 60_000);
    assert.equal(
      condition(target, "GitPathAccepted")?.status,
      "True",
      condition(target, "GitPathAccepted")?.message,
    );
    assert.equal(
      await git.branchHead("state", "overlay"),
      pushed,
      "a folder that renders live is not written",
    );
    assert.ok(
      !env.operator.errors.some((e) => e.includes("read_only_context")),
      "the base document is not refused",
    );
  });

  it("a refused change to a read-only base document is a condition, and the target is not Ready while it stays", async () => {
    const { targets } = clients(kc);
    // No images: or replicas: override of the overlay can say color: green.
    await core.patchNamespacedConfigMap(
      { namespace: "overlay", name: "settings", body: { data: { color: "green" } } },
      mergePatch,
    );
    const refused = await conditionOf(
      targets,
      "overlay",
      "overlay",
      "GitPathAccepted",
      "False",
      "UnsupportedContent",
      60_000,
    );
    assert.match(
      condition(refused, "GitPathAccepted")!.message,
      /ConfigMap overlay\/settings lives in apps\/base\/settings\.yaml/,
    );
    await conditionOf(targets, "overlay", "overlay", "Ready", "False", undefined, 30_000);

    // Live agrees with the render again: the change that stayed unwritten is gone.
    await core.patchNamespacedConfigMap(
      { namespace: "overlay", name: "settings", body: { data: { color: "blue" } } },
      mergePatch,
    );
    await conditionOf(targets, "overlay", "overlay", "GitPathAccepted", "True", undefined, 60_000);
    await conditionOf(targets, "overlay", "overlay", "Ready", "True", undefined, 60_000);
  });

  it("an overlay that cannot be rendered is refused with kustomize's message", async () => {
    // A typo in the base's path: the applier's build fails, and so must the operator's judgement.
    const files = overlayFolder("broken", "../base-v2");
    for (const object of kustomizeBuild(overlayFolder("broken"), "apps/production"))
      await core.createNamespacedConfigMap({ namespace: "broken", body: object });
    await mirror("broken", files);
    const pushed = await git.branchHead("state", "broken");

    const { targets } = clients(kc);
    const target = await conditionOf(
      targets,
      "broken",
      "broken",
      "GitPathAccepted",
      "False",
      "UnsupportedContent",
      60_000,
    );
    const message = condition(target, "GitPathAccepted")!.message;
    assert.match(message, /^kustomize build apps\/production fails/);
    // kustomize's own words, naming the directory it could not find.
    assert.match(message, /base-v2/);
    assert.match(message, /accumulating resources/);
    assert.equal(condition(target, "Ready")?.status, "False");
    assert.equal(condition(target, "Stalled")?.status, "True");
    assert.equal(
      await git.branchHead("state", "broken"),
      pushed,
      "nothing is written to a folder that cannot be rendered",
    );
  });
});
