import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { backoffDelay, type Backoff } from "../../../internal/timing/backoff.ts";
import { seededRandom } from "../../support/random.ts";

const doubling = (jitter: Backoff["jitter"]): Backoff => ({ baseMs: 100, maxMs: 1_000, jitter });
const attempts = [0, 1, 2, 3, 4, 5];

describe("one backoff, exponential, capped and jittered", () => {
  it("without jitter it doubles from the base and stops at the cap", () => {
    assert.deepEqual(
      attempts.map((n) => backoffDelay(doubling("none"), n)),
      [100, 200, 400, 800, 1_000, 1_000],
    );
  });

  it("a slower factor grows the delay slowly", () => {
    const slow: Backoff = { baseMs: 100, maxMs: 500, factor: 1.25, jitter: "none" };
    assert.deepEqual(
      [0, 1, 2, 3, 8, 20].map((n) => backoffDelay(slow, n)),
      [100, 125, 156, 195, 500, 500],
    );
  });

  it("full jitter draws from zero to the delay", () => {
    assert.equal(
      backoffDelay(doubling("full"), 3, () => 0),
      0,
    );
    assert.equal(
      backoffDelay(doubling("full"), 3, () => 1),
      800,
    );
    assert.equal(
      backoffDelay(doubling("full"), 3, () => 0.5),
      400,
    );
  });

  it("equal jitter keeps half the delay as a floor", () => {
    assert.equal(
      backoffDelay(doubling("equal"), 3, () => 0),
      400,
    );
    assert.equal(
      backoffDelay(doubling("equal"), 3, () => 1),
      800,
    );
    assert.equal(
      backoffDelay(doubling("equal"), 9, () => 0),
      500,
      "half the cap, once capped",
    );
  });

  it("a seeded source pins what the jitter draws, and spreads retries that failed together", () => {
    const draw = (seed: number) => {
      const random = seededRandom(seed);
      return attempts.map((n) => backoffDelay(doubling("equal"), n, random));
    };
    assert.deepEqual(draw(42), draw(42), "the same seed draws the same delays");
    const many = Array.from({ length: 50 }, (_, seed) => draw(seed)[0]!);
    assert.ok(many.every((d) => d >= 50 && d <= 100));
    assert.ok(new Set(many).size > 25, `fifty first retries at ${new Set(many).size} instants`);
  });
});
