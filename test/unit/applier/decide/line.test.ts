import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { line, type InLine } from "../../../../internal/applier/decide/line.ts";

const claim = (name: string, facts: Partial<InLine> = {}): InLine => ({
  claim: { namespace: "shop", name },
  creationTimestamp: "2026-12-01T10:00:00.000Z",
  operationInFlight: false,
  holdsFinalizer: false,
  eligible: true,
  ...facts,
});
const names = (claims: InLine[]) => line(claims).map((c) => c.claim.name);

describe("one claim per applier", () => {
  it("the oldest eligible claim holds it", () => {
    assert.deepEqual(names([claim("b"), claim("a", { creationTimestamp: "2026-12-01T09:00:00.000Z" })]), [
      "a",
      "b",
    ]);
  });

  it("a claim carrying its finalizer stays first until it has let go, even when younger", () => {
    const older = claim("older", { creationTimestamp: "2026-12-01T09:00:00.000Z" });
    assert.deepEqual(names([older, claim("holder", { holdsFinalizer: true, eligible: false })]), [
      "holder",
      "older",
    ]);
  });

  it("a claim with an operation in flight comes before a holder", () => {
    const holder = claim("holder", { holdsFinalizer: true });
    assert.deepEqual(names([holder, claim("applying", { operationInFlight: true })]), ["applying", "holder"]);
  });

  it("an older claim that is not eligible and holds nothing keeps no younger one out", () => {
    const older = claim("older", { creationTimestamp: "2026-12-01T09:00:00.000Z", eligible: false });
    assert.deepEqual(names([older, claim("young")]), ["young"]);
  });

  it("ties go by namespace, then name", () => {
    assert.deepEqual(names([claim("b"), claim("a")]), ["a", "b"]);
  });
});
