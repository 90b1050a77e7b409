import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { StaleSnapshots, staleHoldMs } from "../../../../internal/applier/decide/stale.ts";

const quiet = { epoch: 4, ahead: false };

describe("a resync never decides from a snapshot collected while Git was ahead, or across an apply", () => {
  it("a GitTarget's first snapshot of a collection is its startup baseline and never waits", () => {
    const stale = new StaleSnapshots();
    assert.equal(
      stale.judge("shop/apps", "cm", { epoch: 1, ahead: true }, { at: 0, epoch: 2, ahead: true }),
      "initial",
    );
    assert.equal(stale.judge("shop/apps", "secrets", undefined, { at: 0, epoch: 2, ahead: true }), "initial");
  });

  it("a snapshot collected while Git was ahead, across an epoch change, or arriving while Git is ahead is discarded", () => {
    const stale = new StaleSnapshots();
    stale.judge("shop/apps", "cm", undefined, { at: 0, ...quiet });
    const now = { at: 1_000, ...quiet };
    assert.equal(
      stale.judge("shop/apps", "cm", { epoch: 4, ahead: true }, now),
      "discard",
      "collected ahead",
    );
    assert.equal(
      stale.judge("shop/apps", "cm", { epoch: 3, ahead: false }, now),
      "discard",
      "across an apply",
    );
    assert.equal(
      stale.judge("shop/apps", "cm", { epoch: 4, ahead: false }, { ...now, ahead: true }),
      "discard",
    );
    assert.equal(stale.judge("shop/apps", "cm", { epoch: 4, ahead: false }, now), "use", "a fresh one");
  });

  it("a fresh snapshot is asked for once Git is no longer ahead, once per discard", () => {
    const stale = new StaleSnapshots();
    stale.judge("shop/apps", "cm", undefined, { at: 0, ...quiet });
    stale.judge("shop/apps", "cm", { epoch: 3, ahead: true }, { at: 1_000, epoch: 3, ahead: true });
    assert.deepEqual(
      stale.reanchor(2_000, () => true),
      [],
      "Git still ahead",
    );
    assert.deepEqual(
      stale.reanchor(3_000, () => false),
      ["shop/apps"],
    );
    assert.deepEqual(
      stale.reanchor(4_000, () => false),
      [],
      "asked once",
    );
  });

  it("whether Git is ahead is asked only while some GitTarget waits: the worker asks every turn", () => {
    const stale = new StaleSnapshots();
    let asked = 0;
    const ahead = () => (asked++, true);
    assert.deepEqual(stale.reanchor(1_000, ahead), []);
    assert.equal(asked, 0, "nothing held: not asked");
    stale.judge("shop/apps", "cm", undefined, { at: 0, ...quiet });
    stale.judge("shop/apps", "cm", { epoch: 3, ahead: true }, { at: 1_000, epoch: 3, ahead: true });
    stale.judge("shop/web", "cm", undefined, { at: 0, ...quiet });
    stale.judge("shop/web", "cm", { epoch: 3, ahead: true }, { at: 1_000, epoch: 3, ahead: true });
    assert.deepEqual(stale.reanchor(2_000, ahead), []);
    assert.equal(asked, 1, "two held: asked once a turn");
  });

  it("after 5 minutes of discards the next snapshot is asked for and used", () => {
    const stale = new StaleSnapshots();
    stale.judge("shop/apps", "cm", undefined, { at: 0, ...quiet });
    const ahead = { epoch: 4, ahead: true };
    assert.equal(stale.judge("shop/apps", "cm", ahead, { at: 1_000, ...ahead }), "discard");
    assert.equal(stale.dueAt(), 1_000 + staleHoldMs);
    assert.equal(
      stale.judge("shop/apps", "cm", ahead, { at: 60_000, ...ahead }),
      "discard",
      "held from the first",
    );
    assert.deepEqual(
      stale.reanchor(1_000 + staleHoldMs, () => true),
      ["shop/apps"],
      "asked at the limit",
    );
    assert.equal(stale.judge("shop/apps", "cm", ahead, { at: 2_000 + staleHoldMs, ...ahead }), "use_stale");
    assert.equal(stale.dueAt(), undefined);
  });
});
