import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { RetrySchedule } from "../../../../internal/git/worker/retry.ts";
import { seededRandom } from "../../../support/random.ts";

/** A random source of 1 takes the jitter's ceiling: the schedule itself. */
const ceiling = () => 1;

describe("the retry schedule of a branch that cannot reach its remote", () => {
  it("retries after 10 s, doubling to 5 minutes, and remembers since when it has failed", () => {
    const retry = new RetrySchedule(ceiling);
    const delays = [0, 1, 2, 3, 4, 5, 6].map((i) => {
      const now = i * 1_000_000;
      return retry.failed(`attempt ${i}`, now).nextAttemptAt - now;
    });
    assert.deepEqual(delays, [10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000]);
    assert.equal(retry.current?.since.getTime(), 0);
    assert.equal(retry.current?.error, "attempt 6");
  });

  it("jitters each retry within the upper half of its delay, so branches one outage hit come back apart", () => {
    const random = seededRandom(13);
    const firsts = Array.from(
      { length: 20 },
      () => new RetrySchedule(random).failed("down", 0).nextAttemptAt,
    );
    assert.ok(
      firsts.every((at) => at >= 5_000 && at <= 10_000),
      `every first retry within [5 s, 10 s]: ${firsts.join(", ")}`,
    );
    assert.ok(new Set(firsts).size > 10, "branches that failed at once do not retry at once");
    const floor = new RetrySchedule(() => 0);
    assert.deepEqual(
      [0, 1, 2, 3, 4, 5, 6].map(() => floor.failed("down", 0).nextAttemptAt),
      [5_000, 10_000, 20_000, 40_000, 80_000, 150_000, 150_000],
      "never sooner than half the schedule",
    );
  });

  it("ends the outage and starts over at 10 s once a publication lands", () => {
    const retry = new RetrySchedule(ceiling);
    retry.failed("down", 0);
    retry.failed("down", 10_000);
    retry.succeeded();
    assert.equal(retry.current, undefined);
    assert.equal(retry.dueAt, 0);
    assert.equal(retry.failed("down again", 50_000).nextAttemptAt, 60_000);
  });
});
