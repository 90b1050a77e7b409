import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { IntakeGate, intakePauses } from "../../../../internal/git/worker/intakebudget.ts";

const limit = 100;

describe("the branch budget bounds intake while a retry is pending", () => {
  it("a healthy branch never pauses, however much it holds", () => {
    assert.equal(intakePauses(false, false, 10 * limit, limit), false);
  });

  it("a pending retry pauses intake the first time the budget does not fit", () => {
    assert.equal(intakePauses(false, true, limit - 1, limit), false);
    assert.equal(intakePauses(false, true, limit, limit), true);
  });

  it("a paused branch stays paused until a push lands, even as what it holds shrinks", () => {
    assert.equal(intakePauses(true, true, 0, limit), true);
    assert.equal(intakePauses(true, false, 0, limit), false);
  });

  it("the gate lets its waiters go when the retry ends", async () => {
    const gate = new IntakeGate();
    gate.update(true, limit, limit);
    let opened = false;
    const waiting = gate.open().then(() => (opened = true));
    gate.update(true, 0, limit);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(opened, false);
    gate.update(false, 0, limit);
    await waiting;
    assert.equal(opened, true);
  });
});
