import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseDuration, parseQuantity } from "../../../internal/types/units.ts";

describe("parseDuration", () => {
  it("reads Go durations into milliseconds", () => {
    assert.equal(parseDuration("5s"), 5000);
    assert.equal(parseDuration("1m30s"), 90_000);
    assert.equal(parseDuration("1.5h"), 5_400_000);
    assert.equal(parseDuration("250ms"), 250);
    assert.equal(parseDuration("0s"), 0);
    assert.equal(parseDuration("0"), 0);
  });

  it("refuses anything else, saying what it wants", () => {
    for (const text of ["5", "5 s", "five seconds", "1m 30s", "-5s", ""]) {
      assert.throws(() => parseDuration(text), /invalid duration .*Go's notation/, text);
    }
  });
});

describe("parseQuantity", () => {
  it("reads binary and decimal byte quantities", () => {
    assert.equal(parseQuantity("8Mi"), 8 * 1024 * 1024);
    assert.equal(parseQuantity("512Ki"), 512 * 1024);
    assert.equal(parseQuantity("10M"), 10_000_000);
    assert.equal(parseQuantity("1024"), 1024);
  });

  it("refuses units it does not know", () => {
    assert.throws(() => parseQuantity("8MB"), /invalid quantity/);
    assert.throws(() => parseQuantity("lots"), /invalid quantity/);
  });
});
