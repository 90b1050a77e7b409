import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { untilAborted } from "../../../internal/timing/sleep.ts";

/** Whether `promise` settles before the microtasks and timers already queued run out. */
async function settlesSoon(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(() => (settled = true));
  await new Promise((resolve) => setImmediate(resolve));
  return settled;
}

describe("waiting for an abort", () => {
  it("an abort that came before the wait ends it at once", async () => {
    const abort = new AbortController();
    abort.abort();
    assert.equal(await settlesSoon(untilAborted(abort.signal)), true);
  });

  it("a wait begun first ends when the abort comes, not before", async () => {
    const abort = new AbortController();
    const waiting = untilAborted(abort.signal);
    assert.equal(await settlesSoon(waiting), false);
    abort.abort();
    assert.equal(await settlesSoon(waiting), true);
  });
});
