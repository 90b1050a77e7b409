import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { asWatched, newerThanSnapshot } from "../../../internal/watch/listfallback.ts";
import type { Collection } from "../../../internal/stream/collection.ts";

const collection = (group: string, version: string, kind: string): Collection => ({
  key: `${group}/${kind}`,
  group,
  version,
  resource: `${kind.toLowerCase()}s`,
  kind,
  namespaced: true,
  namespace: "",
  labelSelector: "",
});

describe("newerThanSnapshot: which held events of the LIST fallback apply after the snapshot", () => {
  it("applies an event newer than the LIST's resourceVersion", () => {
    assert.equal(newerThanSnapshot("101", "100"), true);
  });

  it("drops an event at or before the LIST's resourceVersion: the snapshot already holds it", () => {
    assert.equal(newerThanSnapshot("100", "100"), false);
    assert.equal(newerThanSnapshot("42", "100"), false);
  });

  it("compares resourceVersions as integers, not as strings", () => {
    assert.equal(newerThanSnapshot("10", "9"), true);
    assert.equal(newerThanSnapshot("9", "10"), false);
  });

  it("compares revisions past the range of a double exactly", () => {
    assert.equal(newerThanSnapshot("9007199254740993", "9007199254740992"), true);
    assert.equal(newerThanSnapshot("9007199254740992", "9007199254740993"), false);
  });

  it("applies an event whose resourceVersion cannot be ordered against the LIST's", () => {
    assert.equal(newerThanSnapshot("abc", "100"), true);
    assert.equal(newerThanSnapshot("100", "v2"), true);
    assert.equal(newerThanSnapshot(undefined, "100"), true);
    assert.equal(newerThanSnapshot("100", ""), true);
  });
});

describe("asWatched: a LIST item carries apiVersion and kind, as a watch event's object does", () => {
  it("gives a core item the bare version as its apiVersion", () => {
    const item = { metadata: { name: "a" }, data: { k: "1" } };
    assert.deepEqual(asWatched(item, collection("", "v1", "ConfigMap")), {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "a" },
      data: { k: "1" },
    });
  });

  it("gives a grouped item group/version as its apiVersion", () => {
    const item = { metadata: { name: "d" } };
    assert.deepEqual(asWatched(item, collection("apps", "v1", "Deployment")), {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "d" },
    });
  });
});
