import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { cursorKeyText, MemoryCursorStore } from "../../../internal/watch/cursor.ts";

const key = {
  targetUid: "t-1",
  group: "apps",
  resource: "deployments",
  namespace: "web",
  labelSelector: "tier=a",
};

describe("resume cursors", () => {
  it("are keyed by target uid, group/resource, namespace and selector", () => {
    assert.equal(cursorKeyText(key), "t-1|apps/deployments|web|tier=a");
    assert.notEqual(
      cursorKeyText(key),
      cursorKeyText({ ...key, targetUid: "t-2" }),
      "a recreated target starts over",
    );
    assert.notEqual(cursorKeyText(key), cursorKeyText({ ...key, labelSelector: "" }));
  });

  it("expire a TTL after the last event or bookmark refreshed them, and a stopped collection's is forgotten", async () => {
    let now = 0;
    const store = new MemoryCursorStore(1_000, () => now);
    store.save(key, "10");
    now = 900;
    assert.equal(await store.load(key), "10");
    store.save(key, "11");
    now = 1_800;
    assert.equal(await store.load(key), "11", "the save refreshed the TTL");
    now = 2_000;
    assert.equal(await store.load(key), undefined, "expired: the reconnect initializes");
    store.save(key, "12");
    store.forget(key);
    assert.equal(await store.load(key), undefined);
  });
});
