import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, it, mock } from "node:test";
import {
  BucketRateLimiter,
  ItemExponentialRateLimiter,
  MaxOfRateLimiter,
} from "../../../internal/operator/ratelimiter.ts";
import { WorkQueue } from "../../../internal/operator/workqueue.ts";
import { seededRandom } from "../../support/random.ts";

/** A random source of 1 takes the jitter's ceiling: the schedule itself, as client-go's. */
const ceiling = () => 1;

/** Takes every key the queue can hand out right now. */
async function drain(queue: WorkQueue): Promise<string[]> {
  const keys: string[] = [];
  while (queue.length > 0) keys.push((await queue.get())!);
  return keys;
}

describe("WorkQueue", () => {
  it("hands keys out in the order they were added", async () => {
    const queue = new WorkQueue();
    for (const key of ["a", "b", "c"]) queue.add(key);
    assert.deepEqual(await drain(queue), ["a", "b", "c"]);
  });

  it("de-duplicates a key that is already waiting", async () => {
    const queue = new WorkQueue();
    queue.add("a");
    queue.add("b");
    queue.add("a");
    assert.deepEqual(await drain(queue), ["a", "b"]);
  });

  it("never hands one key to two workers at once, and requeues it on done() if it changed meanwhile", async () => {
    const queue = new WorkQueue();
    queue.add("a");
    const held = await queue.get();
    queue.add("a");
    assert.equal(queue.length, 0, "a key a worker holds is not handed out again");
    queue.done(held!);
    assert.deepEqual(await drain(queue), ["a"]);
  });

  it("does not requeue a held key that was not added again", async () => {
    const queue = new WorkQueue();
    queue.add("a");
    queue.done((await queue.get())!);
    assert.equal(queue.length, 0);
  });

  it("wakes a waiting worker when a key arrives", async () => {
    const queue = new WorkQueue();
    const waiting = queue.get();
    queue.add("late");
    assert.equal(await waiting, "late");
  });

  it("answers waiting workers with undefined on shutdown, and waits for held keys to be done", async () => {
    const queue = new WorkQueue();
    queue.add("a");
    const held = (await queue.get())!;
    const waiting = queue.get();
    let drained = false;
    const shutdown = queue.shutDown().then(() => (drained = true));
    assert.equal(await waiting, undefined);
    queue.add("ignored");
    assert.equal(queue.length, 0, "a shut-down queue takes nothing new");
    await Promise.resolve();
    assert.equal(drained, false);
    queue.done(held);
    await shutdown;
    assert.equal(drained, true);
  });

  describe("with a clock", () => {
    beforeEach(() => mock.timers.enable({ apis: ["setTimeout", "Date"] }));
    afterEach(() => mock.timers.reset());

    it("queues a key after its delay, keeping the earliest of several", () => {
      const queue = new WorkQueue();
      queue.addAfter("a", 1000);
      queue.addAfter("a", 300);
      queue.addAfter("a", 2000);
      mock.timers.tick(299);
      assert.equal(queue.length, 0);
      mock.timers.tick(1);
      assert.equal(queue.length, 1);
      mock.timers.tick(5000);
      assert.equal(queue.length, 1, "the later delays were superseded, not kept");
    });

    it("backs a failing key off exponentially until it is forgotten", () => {
      const queue = new WorkQueue(new ItemExponentialRateLimiter(10, 1000, ceiling));
      queue.addRateLimited("a");
      queue.addRateLimited("a");
      assert.equal(queue.numRequeues("a"), 2);
      mock.timers.tick(10);
      assert.equal(queue.length, 1, "the first failure waits the base delay");
      queue.forget("a");
      assert.equal(queue.numRequeues("a"), 0);
    });
  });
});

describe("rate limiters", () => {
  it("ItemExponentialRateLimiter doubles per key up to its cap", () => {
    const limiter = new ItemExponentialRateLimiter(5, 30, ceiling);
    assert.deepEqual(
      [1, 2, 3, 4, 5].map(() => limiter.when("a")),
      [5, 10, 20, 30, 30],
    );
    assert.equal(limiter.when("b"), 5, "each key backs off on its own");
  });

  it("ItemExponentialRateLimiter jitters each delay within its upper half, so keys that failed together spread out", () => {
    const limiter = new ItemExponentialRateLimiter(100, 1000, seededRandom(7));
    const keys = Array.from({ length: 20 }, (_, i) => `key-${i}`);
    const first = keys.map((key) => limiter.when(key));
    assert.ok(
      first.every((d) => d >= 50 && d <= 100),
      `within [50, 100]: ${first.join(", ")}`,
    );
    assert.ok(new Set(first).size > 10, "keys that failed at once do not retry at once");
    const second = keys.map((key) => limiter.when(key));
    assert.ok(
      second.every((d) => d >= 100 && d <= 200),
      "the ceiling still doubles per key",
    );
  });

  it("BucketRateLimiter lets a burst through, then spaces retries at its rate", () => {
    let now = 0;
    const limiter = new BucketRateLimiter(10, 2, () => now);
    assert.deepEqual([limiter.when(), limiter.when(), limiter.when()], [0, 0, 100]);
    now = 1000;
    assert.equal(limiter.when(), 0, "tokens come back with time");
  });

  it("MaxOfRateLimiter takes the longest delay", () => {
    const now = 0;
    const limiter = new MaxOfRateLimiter(
      new ItemExponentialRateLimiter(5, 1000, ceiling),
      new BucketRateLimiter(1, 1, () => now),
    );
    assert.equal(limiter.when("a"), 5);
    assert.equal(limiter.when("b"), 1000);
  });
});
