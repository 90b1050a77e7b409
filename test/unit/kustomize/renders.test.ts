import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { materialize } from "../../../internal/git/folder/materialize.ts";
import type { DecidedWrite } from "../../../internal/git/folder/writes.ts";
import { kustomizeBuild } from "../../../internal/kustomize/build.ts";
import { FolderRenders, type Builder } from "../../../internal/kustomize/renders.ts";
import { FolderInventory } from "../../../internal/manifest/inventory/inventory.ts";
import { configMaps } from "../git/fixtures.ts";
import { configMapIdentity } from "../../support/streams.ts";
import { MemoryTree } from "../manifest/memorytree.ts";

const committer = { name: "GitOps Reverser", email: "noreply@configbutler.ai" };

// The base is outside the folder; the overlay patches its mode. kustomize itself is the boundary
// these tests do not test (the e2e tests run the real one), so its output is given.
const base =
  "# the shared base\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: apps\ndata:\n  mode: base\n  color: blue\n";
const patch =
  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: apps\ndata:\n  mode: production\n";
const overlay = "resources:\n  - ../base\npatches:\n  - path: settings-patch.yaml\n";

function settings(data: Record<string, string>) {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "settings", namespace: "apps" }, data };
}

/** A worktree on disk as far as materialize can tell, at a first commit. */
async function overlayTree(): Promise<MemoryTree & { dir: string }> {
  const tree = Object.assign(
    new MemoryTree({
      "apps/base/kustomization.yaml": "resources:\n  - settings.yaml\n",
      "apps/base/settings.yaml": base,
      "apps/production/kustomization.yaml": overlay,
      "apps/production/settings-patch.yaml": patch,
    }),
    { dir: "/worktree" },
  );
  await tree.commit([], "start");
  return tree;
}

const identity = configMapIdentity("settings");
const collection = configMaps;

function overlayWrite(data: Record<string, string>, snapshot = false): DecidedWrite {
  return {
    target: {
      key: "apps/prod",
      path: "apps/production",
      timers: { idleTimeoutMs: 0, maxDurationMs: 0 },
      prune: "OnEvent",
    },
    reason: snapshot ? "reconcile" : "live",
    changes: [{ op: "upsert", identity, object: settings(data) }],
    ...(snapshot ? { sweep: { collection, present: new Set(["apps/settings"]) } } : {}),
  };
}

/** A builder that renders what kustomize renders from the overlay, and counts its builds. */
function countingBuilder(rendered: unknown[] | string): Builder & { builds: string[] } {
  const builds: string[] = [];
  const build = (dir: string) => {
    builds.push(dir);
    return Promise.resolve(
      typeof rendered === "string"
        ? { ok: false as const, message: rendered }
        : { ok: true as const, objects: rendered },
    );
  };
  return Object.assign(build, { builds });
}

async function run(tree: MemoryTree, inventory: FolderInventory, w: DecidedWrite, renders: FolderRenders) {
  const refused: string[] = [];
  const result = await materialize(tree, inventory, w, {
    committer,
    additionalSensitive: [],
    message: () => "m",
    onRefused: (_w, _identity, reason) => refused.push(reason),
    renders,
  });
  return { result, refused };
}

describe("a kustomize folder judged as it renders", () => {
  it("a base document the overlay patches is no change when live equals the render", async () => {
    const tree = await overlayTree();
    const builder = countingBuilder([settings({ mode: "production", color: "blue" })]);
    const { result, refused } = await run(
      tree,
      new FolderInventory("apps/production"),
      overlayWrite({ mode: "production", color: "blue" }),
      new FolderRenders(builder),
    );
    assert.deepEqual(refused, []);
    assert.equal(result.commit, undefined);
    assert.deepEqual(result.refusedWrites, []);
    assert.deepEqual(builder.builds, ["/worktree/apps/production"]);
  });

  it("a live change to a base value no override expresses is refused against the render too", async () => {
    const tree = await overlayTree();
    const { result, refused } = await run(
      tree,
      new FolderInventory("apps/production"),
      overlayWrite({ mode: "production", color: "green" }),
      new FolderRenders(countingBuilder([settings({ mode: "production", color: "blue" })])),
    );
    assert.deepEqual(refused, ["read_only_context"]);
    assert.equal(result.refusedWrites?.length, 1);
    assert.match(result.refusedWrites[0]!.message, /lives in apps\/base\/settings\.yaml/);
    assert.equal(tree.files.get("apps/base/settings.yaml"), base);
  });

  it("a folder is rendered once per commit, and only when it is judged", async () => {
    const tree = await overlayTree();
    const inventory = new FolderInventory("apps/production");
    const builder = countingBuilder([settings({ mode: "production", color: "blue" })]);
    const renders = new FolderRenders(builder);
    // A live write that edits nothing outside the folder's own documents renders nothing.
    await run(tree, inventory, { ...overlayWrite({}), changes: [] }, renders);
    assert.equal(builder.builds.length, 0);
    await run(tree, inventory, overlayWrite({ mode: "production", color: "blue" }, true), renders);
    await run(tree, inventory, overlayWrite({ mode: "production", color: "blue" }, true), renders);
    await run(tree, inventory, overlayWrite({ mode: "production", color: "blue" }), renders);
    assert.equal(builder.builds.length, 1);
  });

  it("a folder kustomize cannot build is refused with kustomize's message, and stays refused at that commit", async () => {
    const tree = await overlayTree();
    const inventory = new FolderInventory("apps/production");
    const said = "accumulating resources: accumulation err='accumulating resources from '../base-v2'";
    const builder = countingBuilder(said);
    const renders = new FolderRenders(builder);
    const snapshot = await run(
      tree,
      inventory,
      overlayWrite({ mode: "production", color: "blue" }, true),
      renders,
    );
    assert.ok(snapshot.result.refusal?.message.startsWith("kustomize build apps/production fails"));
    assert.ok(snapshot.result.refusal?.message.includes(said));
    assert.equal(snapshot.result.refusal?.problems[0]?.path, "apps/production/kustomization.yaml");
    // A live write after it builds nothing again, and is refused by the same verdict.
    const live = await run(tree, inventory, overlayWrite({ mode: "production", color: "blue" }), renders);
    assert.equal(live.result.refusal?.message, snapshot.result.refusal?.message);
    assert.equal(builder.builds.length, 1);
  });

  it("a kustomize folder with no kustomize to render it is refused saying what to install, never to fix the folder", async () => {
    const tree = await overlayTree();
    const missing = "/nonexistent/kustomize";
    const renders = new FolderRenders((dir) => kustomizeBuild({ binary: missing }, dir));
    const { result } = await run(
      tree,
      new FolderInventory("apps/production"),
      overlayWrite({ mode: "production", color: "blue" }, true),
      renders,
    );
    const message = result.refusal?.message ?? "";
    assert.match(message, /kustomize was not found at "\/nonexistent\/kustomize"/);
    assert.match(message, /--kustomize-path/);
    assert.doesNotMatch(message, /fix the folder/);
  });

  it("a snapshot measures a token in the rendered base against live", async () => {
    const tree = await overlayTree();
    const rendered = {
      ...settings({ mode: "production", color: "blue" }),
      data: { mode: "production", region: "${REGION}" },
    };
    const { result } = await run(
      tree,
      new FolderInventory("apps/production"),
      { ...overlayWrite({ mode: "production", region: "eu" }, true) },
      new FolderRenders(countingBuilder([rendered])),
    );
    assert.deepEqual(result.divergences, [
      { document: "ConfigMap apps/settings", path: "data.region", rendered: "${REGION}", live: "eu" },
    ]);
  });
});
