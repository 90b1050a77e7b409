// The branch worker's FIFO counts the snapshots it holds per GitTarget: "the worker has published
// every resync it holds for that GitTarget" (applier-claims.md) is asked on every live write of a
// claimed target, so it must not walk the queue.
import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { describe, it } from "node:test";
import type { Intake } from "../../../../internal/git/folder/targetfolders.ts";
import type { TargetSettings } from "../../../../internal/git/folder/writes.ts";
import { WorkerQueue } from "../../../../internal/git/worker/workerqueue.ts";
import type { Collection } from "../../../../internal/stream/collection.ts";

const collection = { group: "", version: "v1", resource: "configmaps" } as Collection;
const target = (key: string) => ({ key }) as TargetSettings;
const snapshot = (key: string): Intake => ({
  target: target(key),
  item: { type: "snapshot", collection, objects: [] },
});
const marker = (key: string): Intake => ({ target: target(key), item: { type: "replaying", collection } });

describe("a worker's queue knows which GitTargets it holds a resync for", () => {
  it("a snapshot is held from its intake until the loop takes it, at either end, per GitTarget", () => {
    const queue = new WorkerQueue<{ recheck: string }>();
    queue.items([marker("shop/apps"), snapshot("shop/apps")], "back");
    queue.items([snapshot("shop/web")], "front");
    queue.items([snapshot("shop/apps")], "back");
    assert.equal(queue.holdsSnapshot("shop/apps"), true);
    assert.equal(queue.holdsSnapshot("shop/web"), true);
    assert.equal(queue.holdsSnapshot("shop/db"), false);

    queue.shift(); // shop/web's snapshot
    assert.equal(queue.holdsSnapshot("shop/web"), false);
    queue.shift(); // the marker
    queue.shift(); // shop/apps's first snapshot
    assert.equal(queue.holdsSnapshot("shop/apps"), true, "its second is still queued");
    queue.shift();
    assert.equal(queue.holdsSnapshot("shop/apps"), false);
    assert.equal(queue.length, 0);
  });
});

describe("a worker's queue sleeps until its deadline by the clock the loop reads", () => {
  // The loop judges deadlines by Date.now(); a timer that fires before Date.now() reaches its
  // deadline (the event loop's cached time starts it) would find the deadline not yet due, and
  // the next sleep, computed after it passed, would set no timer for it (an apply due after its
  // backoff then waited for an unrelated event). Timers are mocked here and fire at once, as
  // early as possible; Date.now() is the real clock.
  it("a timer that fires before Date.now() reaches the deadline does not end the sleep", async (t) => {
    const realTimeout = setTimeout;
    const pause = (ms: number) => new Promise((resolve) => realTimeout(resolve, ms));
    t.mock.timers.enable({ apis: ["setTimeout"] });
    const queue = new WorkerQueue<{ recheck: string }>();
    const deadline = Date.now() + 200;
    let woke = false;
    const sleeping = queue.sleep([deadline], new AbortController().signal).then(() => (woke = true));
    t.mock.timers.tick(200); // the timer fires; Date.now() is still before the deadline
    await pause(20);
    assert.equal(woke, false, "woke before the deadline");
    await pause(Math.max(0, deadline - Date.now()) + 5);
    t.mock.timers.tick(200);
    await sleeping;
    assert.ok(Date.now() >= deadline);
  });

  it("an event still wakes it at once, and leaves no timer nor listener on the worker's signal behind", async () => {
    const queue = new WorkerQueue<{ recheck: string }>();
    const worker = new AbortController();
    for (let wake = 0; wake < 20; wake++) {
      const sleeping = queue.sleep([Date.now() + 60_000], worker.signal);
      queue.push({ recheck: "shop/apps" });
      await sleeping;
      queue.shift();
    }
    assert.equal(getEventListeners(worker.signal, "abort").length, 0, "listeners left on the signal");
  });

  it("ends when the worker's signal aborts", async () => {
    const queue = new WorkerQueue<{ recheck: string }>();
    const worker = new AbortController();
    const sleeping = queue.sleep([Date.now() + 60_000], worker.signal);
    worker.abort();
    await sleeping;
  });
});
