import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { TargetCollections } from "../../../../internal/git/folder/collections.ts";
import { deleteReaches, pruneRemoves, sweepReaches } from "../../../../internal/git/folder/prune.ts";
import { fileFacts } from "../../../../internal/manifest/inventory/facts.ts";
import type { StreamItem } from "../../../../internal/stream/stream.ts";
import type { Collection } from "../../../../internal/stream/collection.ts";
import { configMaps } from "../fixtures.ts";
import { configMapIdentity } from "../../../support/streams.ts";

const selecting = (sel: string, namespace = "apps"): Collection => ({
  ...configMaps,
  key: `/configmaps@${namespace}?sel=${sel}`,
  namespace,
  labelSelector: `sel=${sel}`,
  selector: { matchLabels: { sel } },
});
const [a, b] = [selecting("a"), selecting("b")];
const clusterWide: Collection = { ...configMaps, key: "/configmaps@?", namespace: "" };

const object = (name: string, labels: Record<string, string>) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, namespace: "apps", labels },
});
const doc = (name: string, labels: Record<string, string> = {}, namespace = "apps") =>
  fileFacts(
    "f.yaml",
    `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: ${namespace}\n  labels: ${JSON.stringify(labels)}\n`,
  ).documents[0]!;

/** The target's collections after these items, as the worker's folder follows them. */
function following(...items: StreamItem[]) {
  const collections = new TargetCollections();
  for (const item of items) collections.observe(item);
  return collections.views();
}
const snapshot = (collection: Collection, ...names: [string, Record<string, string>][]): StreamItem => ({
  type: "snapshot",
  collection,
  objects: names.map(([name, labels]) => ({
    identity: configMapIdentity(name),
    object: object(name, labels),
  })),
});
const sweepOf = (collection: Collection, ...present: string[]) => ({
  collection,
  present: new Set(present.map((n) => `apps/${n}`)),
});
const exit = (collection: Collection, name: string, labels: Record<string, string>) =>
  ({ type: "delete", collection, identity: configMapIdentity(name), exited: { labels } }) as const;

describe("what a prune mode lets remove", () => {
  it("prune Never keeps every document; OnEvent removes on an observed delete; Always also sweeps on snapshots", () => {
    assert.equal(pruneRemoves("Never", "observed"), false);
    assert.equal(pruneRemoves("Never", "inferred"), false);
    assert.equal(pruneRemoves("OnEvent", "observed"), true);
    assert.equal(pruneRemoves("OnEvent", "inferred"), false);
    assert.equal(pruneRemoves("Always", "observed"), true);
    assert.equal(pruneRemoves("Always", "inferred"), true);
  });
});

describe("which documents a snapshot's sweep reaches", () => {
  it("a snapshot establishes absence only inside its own collection: never a document another collection of the target holds or could hold", () => {
    const views = following(snapshot(a), snapshot(b, ["b1", { sel: "b" }]));
    assert.equal(sweepReaches(doc("gone", { sel: "a" }), sweepOf(a), views), true, "its own, absent");
    assert.equal(
      sweepReaches(doc("kept", { sel: "a" }), sweepOf(a, "kept"), views),
      false,
      "its own, present",
    );
    assert.equal(sweepReaches(doc("b1", { sel: "b" }), sweepOf(a), views), false, "the other selector's");
    assert.equal(
      sweepReaches(doc("b2", { sel: "b" }), sweepOf(a), views),
      true,
      "another selector's document its own collection established absent too",
    );
    assert.equal(sweepReaches(doc("hand", { sel: "c" }), sweepOf(a), views), false, "selected by none");
    assert.equal(
      sweepReaches(doc("other", { sel: "a" }, "other"), sweepOf(a), views),
      false,
      "another namespace",
    );
  });

  it("a document the other collection holds by its live items survives a snapshot, whatever its labels in Git", () => {
    const moved: StreamItem = {
      type: "upsert",
      collection: b,
      identity: configMapIdentity("x"),
      object: object("x", { sel: "b" }),
    };
    const views = following(snapshot(a), snapshot(b), moved);
    assert.equal(sweepReaches(doc("x", { sel: "a" }), sweepOf(a), views), false);
  });

  it("a collection still replaying could hold anything it covers; the last snapshot to complete sweeps", () => {
    const replaying = following(snapshot(a), { type: "replaying", collection: b });
    assert.equal(sweepReaches(doc("gone", { sel: "a" }), sweepOf(a), replaying), false);
    const both = following(snapshot(a), snapshot(b));
    assert.equal(sweepReaches(doc("gone", { sel: "a" }), sweepOf(b), both), true);
  });

  it("a namespace collection and a cluster-wide one of the same type are peers: each protects what the other holds", () => {
    const plain = { ...configMaps };
    const views = following(snapshot(plain), snapshot(clusterWide, ["x", {}]));
    assert.equal(sweepReaches(doc("x"), sweepOf(plain), views), false);
    assert.equal(sweepReaches(doc("y"), sweepOf(plain), views), true);
    assert.equal(sweepReaches(doc("x", {}, "other"), sweepOf(plain), views), false, "outside the namespace");
  });
});

describe("which documents a live delete reaches", () => {
  it("an object that stops matching leaves the collection as a deleted one does, unless another collection of the target can hold it", () => {
    const views = following(snapshot(a, ["x", { sel: "a" }]), snapshot(b));
    const deletion = { type: "delete", collection: a, identity: configMapIdentity("x") } as const;
    assert.equal(deleteReaches(deletion, views), true, "a deletion");
    assert.equal(deleteReaches(exit(a, "x", { sel: "none" }), views), true, "an exit nobody selects");
    assert.equal(deleteReaches(exit(a, "x", { sel: "b" }), views), false, "an exit into the other selector");
    assert.equal(deleteReaches(exit(a, "x", { sel: "a" }), views), false, "labelled back already");
    const heldByB = following(snapshot(a), snapshot(b), {
      type: "upsert",
      collection: b,
      identity: configMapIdentity("x"),
      object: object("x", { sel: "b" }),
    });
    assert.equal(deleteReaches(exit(a, "x", { sel: "none" }), heldByB), false, "the other one holds it");
  });
});
