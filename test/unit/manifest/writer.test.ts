import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { materialize } from "../../../internal/git/folder/materialize.ts";
import type { DecidedWrite, PruneMode } from "../../../internal/git/folder/writes.ts";
import { identityOfObject } from "../../../internal/manifest/document/tree.ts";
import { FolderInventory } from "../../../internal/manifest/inventory/inventory.ts";
import { MemoryTree } from "./memorytree.ts";
import { unreadableRaw } from "../../../internal/sanitize/yamlstrings.ts";
import { apply, committer, id, write } from "./materializefixtures.ts";

function configMap(name: string, namespace: string, data: Record<string, string>) {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace }, data };
}

const collection = {
  key: "/configmaps@apps?",
  group: "",
  version: "v1",
  resource: "configmaps",
  kind: "ConfigMap",
  namespaced: true,
  namespace: "apps",
  labelSelector: "",
};

describe("the manifest-aware writer", () => {
  it("finds documents by identity in every manifest of the folder, multi-document files included", async () => {
    const tree = new MemoryTree({
      "clusters/dev/bundle.yaml": `${"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: apps\n"}---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\n  namespace: apps\n`,
      "clusters/dev/README.md": "not a manifest",
    });
    const inventory = new FolderInventory("clusters/dev");
    await inventory.refresh(tree);
    assert.deepEqual(inventory.locate("/ConfigMap/apps/a"), { path: "clusters/dev/bundle.yaml", index: 0 });
    assert.deepEqual(inventory.locate("apps/Deployment/apps/api"), {
      path: "clusters/dev/bundle.yaml",
      index: 1,
    });
    assert.equal(inventory.documentCount, 2);
    assert.equal(
      identityOfObject({
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: "api", namespace: "apps" },
      }),
      "apps/Deployment/apps/api",
    );
  });

  it("writes a new object at its built-in path and bootstraps the folder, keeping an existing README", async () => {
    const tree = new MemoryTree({ "clusters/dev/README.md": "ours" });
    await apply(
      tree,
      write([{ op: "upsert", identity: id("app"), object: configMap("app", "apps", { k: "v" }) }]),
    );
    assert.ok(tree.files.get("clusters/dev/apps/configmaps/app.yaml")?.includes("k: v"));
    assert.equal(tree.files.get("clusters/dev/README.md"), "ours");
    assert.equal(tree.commits[0]?.message, "create app", "the message hears what the write created");
    assert.ok(tree.files.has("clusters/dev/.gittargetignore"));
  });

  it("updates an existing document where it lives, leaving its siblings", async () => {
    const tree = new MemoryTree({
      "clusters/dev/bundle.yaml":
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: apps\ndata:\n  k: old\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: apps\n",
    });
    await apply(
      tree,
      write([{ op: "upsert", identity: id("a"), object: configMap("a", "apps", { k: "new" }) }]),
    );
    const bundle = tree.files.get("clusters/dev/bundle.yaml")!;
    assert.match(bundle, /k: new/);
    assert.match(bundle, /name: b/);
    assert.equal(tree.files.has("clusters/dev/apps/configmaps/a.yaml"), false);
    assert.equal(tree.commits[0]?.message, "update a");
  });

  it("a value kustomize would not carry is not written into a folder kustomize builds; the rest flows, and the object is written once its value is representable", async () => {
    const kustomization =
      "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - bundle.yaml\n";
    const bundle =
      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: apps\ndata:\n  k: old\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: apps\ndata:\n  k: old\n";
    const tree = new MemoryTree({
      "clusters/dev/kustomization.yaml": kustomization,
      "clusters/dev/bundle.yaml": bundle,
    });
    const refused: string[] = [];
    const inventory = new FolderInventory("clusters/dev");
    await apply(
      tree,
      write([
        { op: "upsert", identity: id("a"), object: configMap("a", "apps", { k: "one\u0085two" }) },
        { op: "upsert", identity: id("b"), object: configMap("b", "apps", { k: "new" }) },
      ]),
      refused,
      inventory,
    );
    assert.deepEqual(refused, ["a"]);
    const after = tree.files.get("clusters/dev/bundle.yaml")!;
    assert.match(after, /name: a\n {2}namespace: apps\ndata:\n {2}k: old/, "a is left as it was");
    assert.match(after, /name: b\n {2}namespace: apps\ndata:\n {2}k: new/, "b is written");
    await apply(
      tree,
      write([{ op: "upsert", identity: id("a"), object: configMap("a", "apps", { k: "one two" }) }]),
      refused,
      inventory,
    );
    assert.deepEqual(refused, ["a"], "not refused again");
    assert.match(tree.files.get("clusters/dev/bundle.yaml")!, /k: one two/);
  });

  it("a plain folder no tool rebuilds takes such a value escaped; a folder Flux applies is judged though it holds no kustomization", async () => {
    const plain = new MemoryTree();
    const refused: string[] = [];
    const object = configMap("a", "apps", { k: "one\x7ftwo" });
    await apply(plain, write([{ op: "upsert", identity: id("a"), object }]), refused);
    assert.deepEqual(refused, []);
    assert.match(plain.files.get("clusters/dev/apps/configmaps/a.yaml")!, /k: "one\\x7Ftwo"/);
    const applied = new MemoryTree();
    const claim = { kind: "FluxClaim" as const, namespace: "apps", name: "apps", targetUid: "u" };
    const target = { ...write([]).target, claim };
    await apply(applied, { ...write([{ op: "upsert", identity: id("a"), object }]), target }, refused);
    assert.deepEqual(refused, ["a"]);
    assert.equal(applied.files.has("clusters/dev/apps/configmaps/a.yaml"), false);
  });

  it("a file with raw control characters written by an earlier version heals on the next resync", async () => {
    // An earlier version wrote NEL and DEL raw: Go's YAML readers refuse the file, so kubectl,
    // kustomize and Flux cannot read it, though the yaml library reads the live values from it.
    const raw =
      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: apps\ndata:\n  k: one\u0085two\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: apps\ndata:\n  k: x\x7fy\n";
    const tree = new MemoryTree({ "clusters/dev/bundle.yaml": raw });
    const outcomes: string[] = [];
    const healed: string[] = [];
    const inventory = new FolderInventory("clusters/dev");
    const snapshotOfA = write([
      { op: "upsert", identity: id("a"), object: configMap("a", "apps", { k: "one\u0085two" }) },
    ]);
    const options = {
      onDocument: (_w: unknown, outcome: string) => outcomes.push(outcome),
      onHealed: (_w: unknown, _id: unknown, what: string) => healed.push(what),
    };
    await apply(tree, snapshotOfA, [], inventory, options);
    const bundle = tree.files.get("clusters/dev/bundle.yaml")!;
    assert.equal(unreadableRaw(bundle), undefined, bundle);
    assert.match(bundle, /k: "one\\x85two"/);
    assert.match(bundle, /k: "x\\x7Fy"/, "the other document of the file heals with it");
    assert.deepEqual(outcomes, ["healed"]);
    assert.deepEqual(healed, ["clusters/dev/bundle.yaml held U+0085 raw on line 7"]);
    // Healed, the same snapshot changes nothing.
    await apply(tree, snapshotOfA, [], inventory, options);
    assert.deepEqual(outcomes, ["healed", "unchanged"]);
    assert.equal(tree.files.get("clusters/dev/bundle.yaml"), bundle);
  });

  it("makes no commit for an upsert that changes nothing", async () => {
    const tree = new MemoryTree();
    const object = configMap("same", "apps", { k: "v" });
    await apply(tree, write([{ op: "upsert", identity: id("same"), object }]));
    assert.equal(await apply(tree, write([{ op: "upsert", identity: id("same"), object }])), undefined);
    assert.equal(tree.commits.length, 1);
  });

  it("does not read a document that already is the live object, keys in any order", async () => {
    const tree = new MemoryTree({
      "clusters/dev/same.yaml":
        "# kept as written\nkind: ConfigMap\napiVersion: v1\ndata:\n  k: v\nmetadata:\n  namespace: apps\n  name: same\n",
      "clusters/dev/other.yaml":
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n  namespace: apps\ndata:\n  k: old\n",
    });
    const inventory = new FolderInventory("clusters/dev");
    await inventory.refresh(tree);
    const scanned = tree.reads;
    const same = {
      op: "upsert" as const,
      identity: id("same"),
      object: configMap("same", "apps", { k: "v" }),
    };
    assert.equal(await apply(tree, write([same]), [], inventory), undefined);
    assert.equal(tree.reads, scanned, "agreeing with live, it is not read again");
    const other = {
      op: "upsert" as const,
      identity: id("other"),
      object: configMap("other", "apps", { k: "new" }),
    };
    await apply(tree, write([other]), [], inventory);
    assert.equal(tree.reads, scanned + 1, "one that differs is read and edited");
    assert.match(tree.files.get("clusters/dev/other.yaml")!, /k: new/);
  });

  it("deletes just that document from a multi-document file, and an emptied file", async () => {
    const tree = new MemoryTree({
      "clusters/dev/bundle.yaml":
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: apps\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: apps\n",
      "clusters/dev/single.yaml":
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: apps\n",
    });
    await apply(
      tree,
      write([
        { op: "delete", identity: id("a") },
        { op: "delete", identity: id("c") },
      ]),
    );
    assert.doesNotMatch(tree.files.get("clusters/dev/bundle.yaml")!, /name: a/);
    assert.match(tree.files.get("clusters/dev/bundle.yaml")!, /name: b/);
    assert.equal(tree.files.has("clusters/dev/single.yaml"), false);
  });

  it("refuses a Secret fail-safe: never written, and reported", async () => {
    const tree = new MemoryTree();
    const refused: string[] = [];
    const secret = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "db", namespace: "apps" },
      data: { p: "aHVudGVyMg==" },
    };
    const commit = await apply(
      tree,
      write([{ op: "upsert", identity: id("db", "apps", "secrets", "Secret"), object: secret }]),
      refused,
    );
    assert.deepEqual(refused, ["db"]);
    assert.equal(commit, undefined, "nothing else to write, so no commit");
    assert.equal(tree.files.size, 0);
  });

  describe("mark and sweep", () => {
    const folder = () =>
      new MemoryTree({
        "clusters/dev/apps/configmaps/kept.yaml":
          "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kept\n  namespace: apps\n",
        "clusters/dev/apps/configmaps/gone.yaml":
          "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gone\n  namespace: apps\n",
        "clusters/dev/other/configmaps/elsewhere.yaml":
          "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: elsewhere\n  namespace: other\n",
        "clusters/dev/apps/apps/deployments/api.yaml":
          "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\n  namespace: apps\n",
      });
    const snapshot = (prune: PruneMode) =>
      write(
        [{ op: "upsert", identity: id("kept"), object: configMap("kept", "apps", {}) }],
        { reason: "reconcile", sweep: { collection, present: new Set(["apps/kept"]) } },
        prune,
      );

    it("under Always, removes what the snapshot's own collection no longer holds, and nothing outside it", async () => {
      const tree = folder();
      await apply(tree, snapshot("Always"));
      assert.equal(tree.files.has("clusters/dev/apps/configmaps/gone.yaml"), false);
      assert.ok(
        tree.files.has("clusters/dev/other/configmaps/elsewhere.yaml"),
        "another namespace is never touched",
      );
      assert.ok(
        tree.files.has("clusters/dev/apps/apps/deployments/api.yaml"),
        "another type is never touched",
      );
    });

    for (const prune of ["OnEvent", "Never"] as const) {
      it(`under ${prune}, a snapshot removes nothing`, async () => {
        const tree = folder();
        await apply(tree, snapshot(prune));
        assert.ok(tree.files.has("clusters/dev/apps/configmaps/gone.yaml"));
      });
    }
  });
});

describe("the writer in a kustomize folder", () => {
  const kustomization = "# the root\nresources:\n  - settings.yaml\n";
  const settings =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: apps\ndata:\n  level: info\n";

  it("places a new object beside the one kustomization and lists it; deleting it takes the entry out again", async () => {
    const tree = new MemoryTree({
      "clusters/dev/kustomization.yaml": kustomization,
      "clusters/dev/settings.yaml": settings,
    });
    const inventory = new FolderInventory("clusters/dev");
    await apply(
      tree,
      write([{ op: "upsert", identity: id("fresh"), object: configMap("fresh", "apps", { a: "b" }) }]),
      [],
      inventory,
    );
    assert.ok(tree.files.get("clusters/dev/fresh-configmap.yaml")?.includes("a: b"));
    assert.equal(
      tree.files.get("clusters/dev/kustomization.yaml"),
      `${kustomization}  - fresh-configmap.yaml\n`,
    );

    await apply(tree, write([{ op: "delete", identity: id("fresh") }]), [], inventory);
    assert.equal(tree.files.has("clusters/dev/fresh-configmap.yaml"), false);
    assert.equal(tree.files.get("clusters/dev/kustomization.yaml"), kustomization);
  });

  it("writes a live image back into the images override, and leaves the manifest alone", async () => {
    const deployment = (image: string) => ({
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "api", namespace: "apps" },
      spec: { template: { spec: { containers: [{ name: "api", image }] } } },
    });
    const base =
      "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\n  namespace: apps\nspec:\n  template:\n    spec:\n      containers:\n        - name: api\n          image: nginx:1.24\n";
    const tree = new MemoryTree({
      "clusters/dev/kustomization.yaml":
        'resources:\n  - deployment.yaml\nimages:\n  - name: nginx\n    newTag: "1.25" # pinned\n',
      "clusters/dev/deployment.yaml": base,
    });
    const identity = { ...id("api", "apps", "deployments", "Deployment"), group: "apps" };
    await apply(tree, write([{ op: "upsert", identity, object: deployment("nginx:1.27") }]));
    assert.equal(tree.files.get("clusters/dev/deployment.yaml"), base);
    assert.match(tree.files.get("clusters/dev/kustomization.yaml")!, /newTag: "1\.27" # pinned/);
  });

  it("refuses the whole folder and writes nothing when it holds a secretGenerator", async () => {
    const tree = new MemoryTree({
      "clusters/dev/kustomization.yaml":
        "resources: []\nsecretGenerator:\n  - name: db\n    literals: [a=b]\n",
    });
    const inventory = new FolderInventory("clusters/dev");
    const result = await materialize(
      tree,
      inventory,
      write([{ op: "upsert", identity: id("app"), object: configMap("app", "apps", {}) }]),
      { committer, additionalSensitive: [], message: () => "", onRefused: () => undefined },
    );
    assert.deepEqual(
      result.refusal?.problems.map((p) => p.feature),
      ["secretGenerator"],
    );
    assert.equal(result.commit, undefined);
    assert.equal(tree.files.size, 1);
  });

  it("keeps a ${VAR} token in place, and a snapshot measures it against live", async () => {
    const source =
      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: info\n  namespace: apps\ndata:\n  cluster: ${CLUSTER}\n  region: eu\n";
    const tree = new MemoryTree({ "clusters/dev/info.yaml": source });
    const result = await materialize(
      tree,
      new FolderInventory("clusters/dev"),
      write(
        [
          {
            op: "upsert",
            identity: id("info"),
            object: configMap("info", "apps", { cluster: "prod", region: "us" }),
          },
        ],
        {
          reason: "reconcile",
          sweep: { collection, present: new Set(["apps/info"]) },
        },
      ),
      { committer, additionalSensitive: [], message: () => "", onRefused: () => undefined },
    );
    assert.deepEqual(result.divergences, [
      { document: "ConfigMap apps/info", path: "data.cluster", rendered: "${CLUSTER}", live: "prod" },
    ]);
    assert.equal(tree.files.get("clusters/dev/info.yaml"), source.replace("region: eu", "region: us"));
  });
});

describe("the writer in an overlay that reads its base from outside the folder", () => {
  const base =
    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: podinfo\n  namespace: apps\nspec:\n  template:\n    spec:\n      containers:\n        - name: podinfo\n          image: ghcr.io/stefanprodan/podinfo:6.5.0\n";
  const overlay =
    'resources:\n  - ../base/podinfo\nimages:\n  - name: ghcr.io/stefanprodan/podinfo\n    newTag: "6.6.0" # the release train\n';
  const tree = () =>
    new MemoryTree({
      "apps/base/podinfo/kustomization.yaml": "resources:\n  - deployment.yaml\n",
      "apps/base/podinfo/deployment.yaml": base,
      "apps/production/kustomization.yaml": overlay,
    });
  const podinfo = (image: string, replicas?: number) => ({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "podinfo", namespace: "apps" },
    spec: {
      ...(replicas === undefined ? {} : { replicas }),
      template: { spec: { containers: [{ name: "podinfo", image }] } },
    },
  });
  const identity = { ...id("podinfo", "apps", "deployments", "Deployment"), group: "apps" };
  const overlayWrite = (object: ReturnType<typeof podinfo>): DecidedWrite => ({
    target: {
      key: "apps/prod",
      path: "apps/production",
      timers: { idleTimeoutMs: 0, maxDurationMs: 0 },
      prune: "OnEvent",
    },
    reason: "live",
    changes: [{ op: "upsert", identity, object }],
  });
  const run = async (files: MemoryTree, w: DecidedWrite, refused: string[]) =>
    materialize(files, new FolderInventory("apps/production"), w, {
      committer,
      additionalSensitive: [],
      message: () => "m",
      onRefused: (_w, _identity, reason) => refused.push(reason),
    });

  it("writes a new image through the overlay's override, never into the base, and never places a copy in the folder", async () => {
    const files = tree();
    const refused: string[] = [];
    await run(files, overlayWrite(podinfo("ghcr.io/stefanprodan/podinfo:6.7.1")), refused);
    assert.equal(
      files.files.get("apps/production/kustomization.yaml"),
      overlay.replace('"6.6.0"', '"6.7.1"'),
    );
    assert.equal(files.files.get("apps/base/podinfo/deployment.yaml"), base);
    assert.deepEqual(
      [...files.files.keys()].filter((p) => p.startsWith("apps/production/")),
      ["apps/production/kustomization.yaml", "apps/production/README.md", "apps/production/.gittargetignore"],
    );
    assert.deepEqual(refused, []);
  });

  it("refuses, and writes nothing, a change no override of the folder can express", async () => {
    const files = tree();
    const refused: string[] = [];
    const result = await run(files, overlayWrite(podinfo("ghcr.io/stefanprodan/podinfo:6.6.0", 5)), refused);
    assert.deepEqual(refused, ["read_only_context"]);
    assert.equal(result.commit, undefined);
    assert.equal(files.files.get("apps/production/kustomization.yaml"), overlay);
  });
});
