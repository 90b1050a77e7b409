import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { RetrySchedule } from "../../../internal/git/retry.ts";

describe("the retry schedule of a branch that cannot reach its remote", () => {
  it("retries after 10 s, doubling to 5 minutes, and remembers since when it has failed", () => {
    const retry = new RetrySchedule();
    const delays = [0, 1, 2, 3, 4, 5, 6].map((i) => {
      const now = i * 1_000_000;
      return retry.failed(`attempt ${i}`, now).nextAttemptAt - now;
    });
    assert.deepEqual(delays, [10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000]);
    assert.equal(retry.current?.since.getTime(), 0);
    assert.equal(retry.current?.error, "attempt 6");
  });

  it("ends the outage and starts over at 10 s once a publication lands", () => {
    const retry = new RetrySchedule();
    retry.failed("down", 0);
    retry.failed("down", 10_000);
    retry.succeeded();
    assert.equal(retry.current, undefined);
    assert.equal(retry.dueAt, 0);
    assert.equal(retry.failed("down again", 50_000).nextAttemptAt, 60_000);
  });
});
