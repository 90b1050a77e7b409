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

  it("probes the remote every 10 s meanwhile, and publishes at once when it answers again, however long the outage", () => {
    const retry = new RetrySchedule(ceiling);
    let now = 0;
    for (let i = 0; i < 6; i++) now = retry.failed("down", now).nextAttemptAt; // the backoff at 5 minutes
    const nextAttempt = retry.failed("down", now).nextAttemptAt;
    assert.equal(nextAttempt - now, 300_000);
    assert.equal(retry.probeDueAt, now + 10_000, "a probe 10 s after the attempt");
    retry.probed(now + 10_000, false);
    assert.equal(retry.probeDueAt, now + 20_000, "and every 10 s while nothing answers");
    retry.probed(now + 20_000, true);
    assert.equal(retry.dueAt, now + 20_000, "an answer makes the next publication due at once");
    assert.equal(retry.current?.since.getTime(), 0, "the outage lasts until a publication lands");
  });

  it("a host that answers every probe but refuses the push waits out the backoff", () => {
    const retry = new RetrySchedule(ceiling);
    retry.failed("refused", 0);
    const due = retry.failed("refused", 10_000).nextAttemptAt;
    retry.probed(20_000, true);
    assert.equal(retry.dueAt, due, "a first answer hastens nothing");
    retry.probed(30_000, true);
    assert.equal(retry.dueAt, due);
  });

  it("a local fault is not probed: the remote is not what failed", () => {
    const retry = new RetrySchedule(ceiling);
    retry.failed("disk full", 0, { fault: "local" });
    retry.failed("disk full", 10_000, { fault: "local" });
    assert.equal(retry.probeDueAt, undefined);
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
