import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { coordinated, Exclusions } from "../../../../internal/git/folder/coordinated.ts";
import type { AppliedBy } from "../../../../internal/types/applied.ts";
import type { DesiredObject, StreamItem } from "../../../../internal/stream/stream.ts";
import type { Collection } from "../../../../internal/stream/collection.ts";

const collection = {
  group: "",
  version: "v1",
  resource: "configmaps",
  namespace: "shop",
} as unknown as Collection;
const applier = { kind: "Kustomization" as const, namespace: "shop", name: "apps" };
const object = (name: string, appliedBy?: AppliedBy): DesiredObject => ({
  identity: {
    group: "",
    version: "v1",
    resource: "configmaps",
    kind: "ConfigMap",
    namespace: "shop",
    name,
    uid: `u-${name}`,
  },
  object: { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "shop" } },
  ...(appliedBy ? { appliedBy } : {}),
});
const infra = { kind: "Kustomization" as const, namespace: "shop", name: "infra" };

describe("another applier's objects stay out of a coordinated folder", () => {
  it("a live write of an object another applier applies is not mirrored", () => {
    const item: StreamItem = { type: "upsert", collection, ...object("cache", infra) };
    const result = coordinated({ applier }, item);
    assert.equal(result.item, undefined);
    assert.deepEqual(
      result.excluded.map((i) => i.name),
      ["cache"],
    );
  });

  it("an object owned by nobody, or by the folder's own applier, is mirrored as before", () => {
    for (const owner of [undefined, applier]) {
      const item: StreamItem = { type: "upsert", collection, ...object("web", owner) };
      assert.equal(coordinated({ applier }, item).item, item);
    }
  });

  it("a snapshot entry of another applier's object is neither upserted nor treated as missing", () => {
    const item: StreamItem = {
      type: "snapshot",
      collection,
      objects: [object("web"), object("cache", infra)],
    };
    const result = coordinated({ applier }, item);
    assert.ok(result.item?.type === "snapshot");
    assert.deepEqual(
      result.item.objects.map((o) => o.identity.name),
      ["web"],
    );
    assert.deepEqual(result.item.kept, ["shop/cache"]);
  });

  it("a folder with no claim excludes nothing", () => {
    const item: StreamItem = { type: "upsert", collection, ...object("cache", infra) };
    assert.equal(coordinated({}, item).item, item);
  });

  it("each excluded object is reported once", () => {
    const exclusions = new Exclusions();
    const cache = object("cache", infra).identity;
    assert.equal(exclusions.firstSeen("shop/apps", [cache]).length, 1);
    assert.equal(exclusions.firstSeen("shop/apps", [cache]).length, 0);
    assert.equal(exclusions.firstSeen("shop/other", [cache]).length, 1);
  });
});
