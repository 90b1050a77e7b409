import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { followedObjects } from "../../../../internal/git/folder/followed.ts";
import { materialize, type AppliedChange } from "../../../../internal/git/folder/materialize.ts";
import type { CollectionView } from "../../../../internal/git/folder/prune.ts";
import type { DecidedWrite } from "../../../../internal/git/folder/writes.ts";
import {
  chainNamespace,
  effectiveNamespace,
  namespacelessDescribes,
} from "../../../../internal/manifest/document/identity.ts";
import { FolderInventory } from "../../../../internal/manifest/inventory/inventory.ts";
import { acceptFollowed, findDocument } from "../../../../internal/manifest/lookup.ts";
import { newDocument } from "../../../../internal/manifest/newdocument.ts";
import { configMapIdentity } from "../../../support/streams.ts";
import { MemoryTree } from "../memorytree.ts";

const id = configMapIdentity;
const configMap = (name: string, namespace: string | undefined, data: Record<string, string>) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, ...(namespace ? { namespace } : {}) },
  data,
});
const doc = (name: string, extra = "") =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n${extra}data:\n  mode: slow\n`;

/** Every ConfigMap of the cluster, as a target with a cluster-wide rule follows them. */
function followed(members: string[]): CollectionView[] {
  const collection = {
    key: "/configmaps@?",
    group: "",
    version: "v1",
    resource: "configmaps",
    kind: "ConfigMap",
    namespaced: true,
    namespace: "",
    labelSelector: "",
  };
  return [{ collection, complete: true, members: new Set(members) }];
}

async function apply(tree: MemoryTree, changes: DecidedWrite["changes"], collections: CollectionView[] = []) {
  const refused: string[] = [];
  const inventory = new FolderInventory("f");
  const write: DecidedWrite = {
    target: { key: "apps/t", path: "f", timers: { idleTimeoutMs: 0, maxDurationMs: 0 }, prune: "OnEvent" },
    reason: "live",
    changes,
  };
  const result = await materialize(
    tree,
    inventory,
    write,
    {
      committer: { name: "t", email: "t@example.com" },
      additionalSensitive: [],
      message: (_w: DecidedWrite, applied: AppliedChange[]) => applied.map((a) => a.path).join(", "),
      onRefused: (_w, _identity, _reason, message) => refused.push(message),
    },
    { prune: "OnEvent", collections },
  );
  return { result, refused };
}

describe("effective identity", () => {
  it("a kustomization namespace overrides a namespaced document's own and leaves a cluster-scoped one alone", () => {
    assert.equal(effectiveNamespace("", "team-a", true), "team-a");
    assert.equal(effectiveNamespace("elsewhere", "team-a", true), "team-a");
    assert.equal(effectiveNamespace("", "team-a", false), "");
    assert.equal(effectiveNamespace("apps", undefined, true), "apps");
  });

  it("the outermost kustomization's namespace wins", () => {
    const namespaces: Record<string, string | undefined> = { base: "base-ns", mid: undefined, prod: "prod" };
    assert.equal(
      chainNamespace(["base", "mid", "prod"], (k) => namespaces[k]),
      "prod",
    );
    assert.equal(
      chainNamespace(["base", "mid"], (k) => namespaces[k]),
      "base-ns",
    );
    assert.equal(
      chainNamespace([], (k) => namespaces[k]),
      undefined,
    );
  });

  it("a namespace-less document describes the object only when no other namespace follows its name", () => {
    assert.equal(namespacelessDescribes("a", new Set()), true);
    assert.equal(namespacelessDescribes("a", new Set(["a"])), true);
    assert.equal(namespacelessDescribes("a", new Set(["a", "b"])), false);
    assert.equal(namespacelessDescribes("a", new Set(["b"])), false);
  });

  it("a new object under a kustomization namespace is written without one, and one of another namespace is refused", () => {
    const object = configMap("fresh", "team-a", { a: "b" });
    assert.deepEqual(newDocument(object, "f/fresh.yaml", "team-a"), {
      object: configMap("fresh", undefined, { a: "b" }),
    });
    assert.deepEqual(newDocument(object, "f/fresh.yaml", undefined), { object });
    const refused = newDocument(object, "f/fresh.yaml", "team-b");
    assert.ok("refused" in refused);
    assert.match(refused.refused, /f\/fresh\.yaml.*namespace: team-b.*spec\.placement/);
  });
});

describe("the writer matches documents by their effective identity", () => {
  it("a document without a namespace under a kustomization namespace is edited in place, and a new one is listed without one", async () => {
    const tree = new MemoryTree({
      "f/kustomization.yaml": "namespace: team-a\nresources:\n  - settings.yaml\n",
      "f/settings.yaml": `# kept\n${doc("settings")}`,
    });
    await apply(tree, [
      {
        op: "upsert",
        identity: id("settings", "team-a"),
        object: configMap("settings", "team-a", { mode: "fast" }),
      },
      { op: "upsert", identity: id("fresh", "team-a"), object: configMap("fresh", "team-a", { a: "b" }) },
    ]);
    assert.equal(tree.files.get("f/settings.yaml"), `# kept\n${doc("settings").replace("slow", "fast")}`);
    assert.doesNotMatch(tree.files.get("f/fresh-configmap.yaml") ?? "", /namespace/);
    assert.equal(
      tree.files.get("f/kustomization.yaml"),
      "namespace: team-a\nresources:\n  - settings.yaml\n  - fresh-configmap.yaml\n",
    );
  });

  it("a kustomization namespace moves a document that writes another one", async () => {
    const tree = new MemoryTree({
      "f/kustomization.yaml": "namespace: team-a\nresources:\n  - settings.yaml\n",
      "f/settings.yaml": doc("settings", "  namespace: old\n"),
    });
    const inventory = new FolderInventory("f");
    await inventory.refresh(tree);
    const followedNothing = followedObjects([]);
    assert.deepEqual(
      findDocument(
        inventory,
        { group: "", kind: "ConfigMap", namespace: "team-a", name: "settings" },
        followedNothing,
      ),
      { found: { ...inventory.named("", "ConfigMap", "settings")[0]! } },
    );
    assert.equal(
      findDocument(
        inventory,
        { group: "", kind: "ConfigMap", namespace: "old", name: "settings" },
        followedNothing,
      ),
      undefined,
    );
  });

  it("an unambiguous namespace-less document is matched and keeps having no namespace", async () => {
    const tree = new MemoryTree({ "f/settings.yaml": doc("settings") });
    const { refused } = await apply(
      tree,
      [
        {
          op: "upsert",
          identity: id("settings", "apps"),
          object: configMap("settings", "apps", { mode: "fast" }),
        },
      ],
      followed(["apps/settings", "other/unrelated"]),
    );
    assert.deepEqual(refused, []);
    assert.deepEqual(
      [...tree.files.keys()].filter((p) => p.endsWith(".yaml")),
      ["f/settings.yaml"],
    );
    assert.equal(tree.files.get("f/settings.yaml"), doc("settings").replace("slow", "fast"));
  });

  it("an ambiguous namespace-less document refuses the folder, naming the document and the fix", async () => {
    const source = doc("settings");
    const tree = new MemoryTree({ "f/settings.yaml": source });
    const { result } = await apply(
      tree,
      [
        {
          op: "upsert",
          identity: id("settings", "apps"),
          object: configMap("settings", "apps", { mode: "fast" }),
        },
      ],
      followed(["apps/settings", "other/settings"]),
    );
    assert.equal(result.commit, undefined);
    assert.equal(tree.files.get("f/settings.yaml"), source);
    assert.equal(tree.files.size, 1, "no second document");
    assert.match(
      result.refusal?.message ?? "",
      /f\/settings\.yaml has namespace-less document \(document 0, ConfigMap settings, which the target follows in apps, other\)/,
    );
    assert.match(
      result.refusal?.message ?? "",
      /set metadata\.namespace in it, or a namespace: in the kustomization/,
    );
  });

  it("a cluster-scoped document without a namespace is never ambiguous", async () => {
    const tree = new MemoryTree({
      "f/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: settings\n",
    });
    const inventory = new FolderInventory("f");
    await inventory.refresh(tree);
    assert.equal(
      acceptFollowed(inventory, followedObjects(followed(["a/settings", "b/settings"]))),
      undefined,
    );
  });
});
