import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CommitWindow } from "../../../../internal/git/worker/window.ts";

const alice = { author: "alice <alice@example.com>", target: "team-a/t" };
const bob = { author: "bob <bob@example.com>", target: "team-a/t" };
const otherTarget = { author: "alice <alice@example.com>", target: "team-a/u" };
const timers = { idleTimeoutMs: 5_000, maxDurationMs: 60_000 };

describe("the commit window", () => {
  it("collects one owner's writes into one window", () => {
    const window = new CommitWindow<string>(1_000_000);
    for (let i = 0; i < 5; i++)
      assert.deepEqual(window.add(alice, timers, "cm/a", `edit ${i}`, 10, i * 100), []);
    assert.equal(window.isOpen, true);
    assert.deepEqual(
      window.close("shutdown")?.writes,
      ["edit 4"],
      "repeated writes to one object: last write wins",
    );
  });

  it("closes the open window first when another author writes", () => {
    const window = new CommitWindow<string>(1_000_000);
    window.add(alice, timers, "cm/a", "alice's", 10, 0);
    const [closed] = window.add(bob, timers, "cm/a", "bob's", 10, 100);
    assert.deepEqual([closed?.owner, closed?.reason, closed?.writes], [alice, "other_owner", ["alice's"]]);
    assert.deepEqual(window.owner, bob);
  });

  it("closes the open window first when another GitTarget writes, so targets never mix", () => {
    const window = new CommitWindow<string>(1_000_000);
    window.add(alice, timers, "cm/a", "t", 10, 0);
    assert.equal(window.add(otherTarget, timers, "cm/b", "u", 10, 1)[0]?.reason, "other_owner");
  });

  it("closes after idleTimeout of silence, each write restarting it", () => {
    const window = new CommitWindow<string>(1_000_000);
    window.add(alice, timers, "cm/a", "1", 10, 0);
    window.add(alice, timers, "cm/b", "2", 10, 4_000);
    assert.equal(window.tick(8_999), undefined);
    assert.equal(window.dueAt(), 9_000);
    assert.equal(window.tick(9_000)?.reason, "idle");
  });

  it("closes maxDuration after it opened, however busy it is", () => {
    const window = new CommitWindow<string>(1_000_000);
    for (let t = 0; t < 60_000; t += 1_000) window.add(alice, timers, `cm/${t}`, "x", 10, t);
    assert.equal(window.dueAt(), 60_000);
    assert.equal(window.tick(60_000)?.reason, "max_duration");
  });

  it("with idleTimeout 0s, closes after every change", () => {
    const window = new CommitWindow<string>(1_000_000);
    window.add(alice, { idleTimeoutMs: 0, maxDurationMs: 60_000 }, "cm/a", "x", 10, 500);
    assert.equal(window.tick(500)?.reason, "idle");
  });

  it("closes at once when the buffered bytes reach the branch buffer limit, counting a rewrite once", () => {
    const window = new CommitWindow<string>(100);
    window.add(alice, timers, "cm/a", "big", 60, 0);
    assert.deepEqual(window.add(alice, timers, "cm/a", "bigger", 70, 1), [], "a rewrite replaces its bytes");
    const [closed] = window.add(alice, timers, "cm/b", "more", 30, 2);
    assert.deepEqual([closed?.reason, closed?.writes], ["buffer_full", ["bigger", "more"]]);
    assert.equal(closed?.bytes, 100, "what the closed window weighs, the rewrite counted once");
    assert.equal(window.isOpen, false);
  });

  it("closes for a resync or shutdown, and an empty window closes to nothing", () => {
    const window = new CommitWindow<string>(1_000);
    assert.equal(window.close("resync"), undefined);
    window.add(alice, timers, "cm/a", "x", 1, 0);
    assert.equal(window.close("resync")?.reason, "resync");
    assert.equal(window.dueAt(), undefined);
  });
});
