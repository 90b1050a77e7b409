import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { RefusedWrites, unwrittenMessage } from "../../../../internal/git/folder/refusedwrites.ts";
import type { Change } from "../../../../internal/git/folder/writes.ts";

const upsert = (name: string): Change => ({
  op: "upsert",
  identity: {
    group: "",
    version: "v1",
    resource: "configmaps",
    kind: "ConfigMap",
    namespace: "apps",
    name,
    uid: name,
  },
  object: { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "apps" } },
});
const key = (name: string) => `/ConfigMap/apps/${name}`;

describe("a refused change stays in a condition until a later write of the object lands", () => {
  it("an object refused stays refused while other objects are written, and clears when its own write lands", () => {
    const refused = new RefusedWrites();
    const a = { key: key("a"), message: "a is read-only", reason: "read_only_base" };
    refused.took([upsert("a"), upsert("b")], [a]);
    refused.took([upsert("b")], []);
    assert.deepEqual(refused.list(), [a]);
    refused.took([upsert("a")], []);
    assert.deepEqual(refused.list(), []);
  });

  it("the message counts what stays unwritten and shows the first three", () => {
    assert.equal(unwrittenMessage([]), undefined);
    assert.equal(unwrittenMessage(["x"]), "A change was not written, so Git does not hold what runs: x");
    assert.equal(
      unwrittenMessage(["a", "b", "c", "d", "e"]),
      "5 changes were not written, so Git does not hold what runs: a; b; c; and 2 more",
    );
  });
});
