import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { acceptFolder } from "../../../../internal/manifest/inventory/acceptance.ts";
import { fileFacts } from "../../../../internal/manifest/inventory/facts.ts";
import { FolderInventory } from "../../../../internal/manifest/inventory/inventory.ts";
import { MemoryTree } from "../memorytree.ts";

const configMap = (name: string, namespace = "apps") =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: ${namespace}\n`;

/** A tree that keeps every commit's files, so it can name the paths two commits differ in, as a clone does. */
class HistoryTree extends MemoryTree {
  private readonly history = new Map<string, Map<string, string>>();

  override async commit(paths: Iterable<string>, message: string): Promise<string | undefined> {
    const commit = await super.commit(paths, message);
    this.history.set(commit!, new Map(this.files));
    return commit;
  }

  changedPaths(from: string, to: string, folder: string): Promise<string[]> {
    const [a, b] = [this.history.get(from)!, this.history.get(to)!];
    const paths = new Set([...a.keys(), ...b.keys()]);
    return Promise.resolve(
      [...paths].filter((p) => p.startsWith(`${folder}/`) && a.get(p) !== b.get(p)).sort(),
    );
  }
}

function folderOf(count: number): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 0; i < count; i++) files[`f/apps/configmaps/c${i}.yaml`] = configMap(`c${i}`);
  return files;
}

describe("the folder inventory", () => {
  it("reads a folder once, and a commit that changed two files costs two parses, not a rescan", async () => {
    const tree = new HistoryTree(folderOf(50));
    await tree.commit([], "seed");
    const inventory = new FolderInventory("f");
    await inventory.refresh(tree);
    assert.equal(inventory.lastRefreshParsed, 50);
    assert.equal(inventory.documentCount, 50);

    await inventory.refresh(tree);
    assert.equal(inventory.lastRefreshParsed, 0, "the same commit reads nothing");

    // Somebody else's commit, as a fetch brings it: one file changed, one added.
    await tree.write("f/apps/configmaps/c1.yaml", configMap("renamed"));
    await tree.write("f/extra.yaml", configMap("extra"));
    await tree.commit(["f/apps/configmaps/c1.yaml", "f/extra.yaml"], "foreign");
    await inventory.refresh(tree);
    assert.equal(inventory.lastRefreshParsed, 2);
    assert.equal(inventory.locate("/ConfigMap/apps/c1"), undefined);
    assert.deepEqual(inventory.locate("/ConfigMap/apps/renamed"), {
      path: "f/apps/configmaps/c1.yaml",
      index: 0,
    });
    assert.deepEqual(inventory.locate("/ConfigMap/apps/extra"), { path: "f/extra.yaml", index: 0 });
  });

  it("follows the writer's own updates, and a commit of them needs no read", async () => {
    const tree = new HistoryTree(folderOf(3));
    await tree.commit([], "seed");
    const inventory = new FolderInventory("f");
    await inventory.refresh(tree);
    await tree.remove("f/apps/configmaps/c0.yaml");
    inventory.update("f/apps/configmaps/c0.yaml", undefined);
    inventory.committed(await tree.commit(["f/apps/configmaps/c0.yaml"], "delete"));
    await inventory.refresh(tree);
    assert.equal(inventory.lastRefreshParsed, 0);
    assert.equal(inventory.documentCount, 2);
  });

  it("reads the whole folder again after it is invalidated, as after a failed write", async () => {
    const tree = new HistoryTree(folderOf(4));
    await tree.commit([], "seed");
    const inventory = new FolderInventory("f");
    await inventory.refresh(tree);
    inventory.invalidate();
    await inventory.refresh(tree);
    assert.equal(inventory.lastRefreshParsed, 4);
  });

  it("never reads what .gittargetignore names, and reads the folder again when that file changes", async () => {
    const tree = new HistoryTree({
      ...folderOf(2),
      "f/.gittargetignore": "scratch/\n",
      "f/scratch/notes.yaml": "not: [a manifest",
    });
    await tree.commit([], "seed");
    const inventory = new FolderInventory("f");
    await inventory.refresh(tree);
    assert.equal(inventory.has("f/scratch/notes.yaml"), false);
    assert.equal(inventory.accept(), undefined, "an ignored file is never judged");

    await tree.write("f/.gittargetignore", "\n");
    await tree.commit(["f/.gittargetignore"], "stop ignoring");
    await inventory.refresh(tree);
    assert.equal(inventory.lastRefreshParsed, 3, "the whole folder, under the new rules");
    assert.match(inventory.accept()?.message ?? "", /f\/scratch\/notes\.yaml/);
  });

  it("judges a folder as the gate does, looking at every file only when its indexes show a problem", async () => {
    const files: Record<string, string> = { ...folderOf(3) };
    const inventory = new FolderInventory("f");
    await inventory.refresh(new MemoryTree(files));
    const deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\n";
    // Each step changes one file, as the writer does, and the verdict must be the whole folder's.
    const steps: [string, string | undefined, boolean][] = [
      ["f/apps/configmaps/c1.yaml", configMap("c1") + "---\n" + configMap("c2"), true],
      ["f/apps/configmaps/c1.yaml", configMap("c1"), false],
      ["f/broken.yaml", "not: [a manifest", true],
      ["f/broken.yaml", undefined, false],
      ["f/base/deployment.yaml", deployment, false],
      ["f/a-patch.yaml", deployment, true],
      [
        "f/kustomization.yaml",
        "resources:\n  - base/deployment.yaml\npatches:\n  - path: a-patch.yaml\n",
        false,
      ],
      [
        "f/kustomization.yaml",
        "resources:\n  - base/deployment.yaml\npatches:\n  - path: gone.yaml\n    target:\n      kind: Deployment\n",
        true,
      ],
      ["f/kustomization.yaml", undefined, true],
      ["f/a-patch.yaml", undefined, false],
    ];
    for (const [path, content, refused] of steps) {
      if (content === undefined) delete files[path];
      else files[path] = content;
      inventory.update(path, content);
      const whole = acceptFolder(Object.entries(files).map(([p, c]) => fileFacts(p, c)));
      assert.deepEqual(
        inventory.accept(),
        whole,
        `after ${path} ${content === undefined ? "removed" : "written"}`,
      );
      assert.equal(whole !== undefined, refused, `the gate's verdict after ${path}`);
    }
  });

  it("finds an object's document, never the strategic-merge patch that repeats its identity", async () => {
    const tree = new MemoryTree({
      "f/base/deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\n",
      "f/a-patch.yaml":
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\nspec:\n  replicas: 3\n",
      "f/kustomization.yaml": "resources:\n  - base/deployment.yaml\npatches:\n  - path: a-patch.yaml\n",
    });
    const inventory = new FolderInventory("f");
    await inventory.refresh(tree);
    assert.deepEqual(inventory.locate("apps/Deployment//api"), { path: "f/base/deployment.yaml", index: 0 });
    assert.deepEqual(
      inventory.documents().map((d) => d.key),
      ["apps/Deployment//api"],
      "a sweep never sees the patch",
    );
    assert.equal(inventory.accept(), undefined);
  });

  it("names the kustomizations that build a file, innermost first", async () => {
    const tree = new MemoryTree({
      "f/base/kustomization.yaml": "resources:\n  - deployment.yaml\n",
      "f/base/deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\n",
      "f/prod/kustomization.yaml": "resources:\n  - ../base\n",
    });
    const inventory = new FolderInventory("f");
    await inventory.refresh(tree);
    assert.deepEqual(inventory.chainOf("f/base/deployment.yaml"), [
      "f/base/kustomization.yaml",
      "f/prod/kustomization.yaml",
    ]);
    assert.deepEqual(inventory.kustomizations().sort(), [
      "f/base/kustomization.yaml",
      "f/prod/kustomization.yaml",
    ]);
  });

  it("stops the chain below two overlays that include one base: which one rendered live is ambiguous", async () => {
    const tree = new MemoryTree({
      "f/base/kustomization.yaml": "resources:\n  - deployment.yaml\n",
      "f/base/deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\n",
      "f/prod/kustomization.yaml": "resources:\n  - ../base\n",
      "f/staging/kustomization.yaml": "resources:\n  - ../base\n",
    });
    const inventory = new FolderInventory("f");
    await inventory.refresh(tree);
    assert.deepEqual(inventory.chainOf("f/base/deployment.yaml"), ["f/base/kustomization.yaml"]);
  });
});

describe("an inventory kept across a restart", () => {
  it("restored at the commit the worktree is at, it reads nothing, and knows every document", async () => {
    const tree = new HistoryTree(folderOf(20));
    await tree.commit([], "seed");
    const before = new FolderInventory("f");
    await before.refresh(tree);
    const saved = JSON.parse(JSON.stringify(before.save())) as NonNullable<
      ReturnType<FolderInventory["save"]>
    >;

    const after = new FolderInventory("f");
    assert.equal(after.restore(saved), true);
    const reads = tree.reads;
    await after.refresh(tree);
    assert.equal(tree.reads, reads, "no file read");
    assert.equal(after.documentCount, 20);
    assert.deepEqual(after.locate("/ConfigMap/apps/c7"), before.locate("/ConfigMap/apps/c7"));
  });

  it("restored at an older commit, it reads only what changed since; at one the tree lacks, all of it", async () => {
    const tree = new HistoryTree(folderOf(20));
    await tree.commit([], "seed");
    const before = new FolderInventory("f");
    await before.refresh(tree);
    const saved = before.save()!;
    tree.files.set("f/apps/configmaps/c3.yaml", configMap("renamed"));
    await tree.commit(["f/apps/configmaps/c3.yaml"], "foreign");

    const after = new FolderInventory("f");
    after.restore(saved);
    await after.refresh(tree);
    assert.equal(after.lastRefreshParsed, 1);
    assert.ok(after.locate("/ConfigMap/apps/renamed"));
    assert.equal(after.locate("/ConfigMap/apps/c3"), undefined);

    const lost = new FolderInventory("f");
    lost.restore({ ...saved, commit: "a-commit-this-clone-never-had" });
    await lost.refresh(tree);
    assert.equal(lost.lastRefreshParsed, 20, "read whole");
  });

  it("is not taken for another folder", () => {
    const saved = { version: 3 as const, folder: "other", commit: "c", ignore: "", files: [] };
    assert.equal(new FolderInventory("f").restore(saved), false);
  });
});

describe("a saved inventory of a shape this version does not know", () => {
  it("is not taken, and the folder is read whole", async () => {
    const tree = new HistoryTree(folderOf(3));
    await tree.commit([], "seed");
    const inventory = new FolderInventory("f");
    const broken = {
      version: 3 as const,
      folder: "f",
      commit: "c",
      ignore: "",
      files: [{ path: "f/x.yaml" }],
    };
    assert.equal(inventory.restore(broken as never), false);
    await inventory.refresh(tree);
    assert.equal(inventory.lastRefreshParsed, 3);
  });
});
