import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Applier, Attempt, Outcome } from "../../../internal/applier/due.ts";
import type { WriteVerdict } from "../../../internal/applier/window.ts";
import { WorkerApplies, windowGraceMs, type AttemptReport } from "../../../internal/git/worker/applies.ts";
import { configMapIdentity } from "../../support/streams.ts";
import { quiet } from "../../support/worker.ts";

const applier: Applier = {
  claim: { namespace: "shop", name: "apps" },
  source: "self|shop/state",
  holds: true,
  targets: [{ uid: "t1", ref: { namespace: "shop", name: "apps" }, published: true }],
};
const at = (ms: number) => new Date(ms).toISOString();
const flux = (ms: number) => [{ manager: "kustomize-controller", time: at(ms) }];
const person = (ms: number) => [{ manager: "kubectl-edit", time: at(ms) }];
const settings = configMapIdentity("settings", "shop");

/** A worker's applies with one applier, whose attempts wait until the test ends them. */
function applies() {
  const sent: Attempt[] = [];
  const judged: WriteVerdict[] = [];
  const repairs: boolean[] = [];
  const ends: ((outcome: Outcome) => void)[] = [];
  const worker = new WorkerApplies(
    {
      appliers: () => [applier],
      dispatch: (attempt) => {
        sent.push(attempt);
        return new Promise((resolve) => ends.push(resolve));
      },
      judged: (_claim, verdict) => void judged.push(verdict),
      repairPending: (_claim, pending) => void repairs.push(pending),
    },
    quiet,
  );
  /** Observes the tip and sends the converge it makes due, at `now`. */
  const sendAt = (now: number) => {
    worker.fetched("c1");
    assert.deepEqual(worker.next(now, { tip: "c1", trusted: true, pending: 0, held: false }), {
      kind: "flush",
    });
    assert.deepEqual(worker.next(now, { tip: "c1", trusted: true, pending: 0, held: false }), {
      kind: "send",
      tip: "c1",
    });
    const reports: AttemptReport[] = [];
    worker.send(
      "c1",
      now,
      () => true,
      (r) => reports.push(r),
    );
    return reports;
  };
  return { worker, sent, judged, repairs, ends, sendAt };
}

describe("the apply window judges the applier's writes to its folder", () => {
  it("the apply's own write, with nobody's edit in the window, is its echo: not mirrored", () => {
    const { worker, judged, sendAt } = applies();
    sendAt(10_000);
    assert.equal(worker.admits("shop/apps", settings, flux(11_000), 11_000), false);
    assert.deepEqual(judged, ["echo"]);
  });

  it("a late apply over a newer API edit is withheld, Git keeps the edit, and a Repair is due", () => {
    const { worker, judged, repairs, sendAt, ends, sent } = applies();
    sendAt(10_000);
    assert.equal(worker.admits("shop/apps", settings, person(12_000), 12_000), true, "the edit is mirrored");
    assert.equal(worker.admits("shop/apps", settings, flux(13_000), 13_000), false, "the late apply is not");
    assert.deepEqual(judged, ["withheld"]);
    ends[0]!({ kind: "succeeded", commit: "c1" });
    worker.reported({ attempt: sent[0]!, outcome: { kind: "succeeded", commit: "c1" } }, 14_000);
    // The Repair asks for the tip again although it was just applied.
    assert.deepEqual(worker.next(14_000, { tip: "c1", trusted: true, pending: 0, held: false }), {
      kind: "flush",
    });
    assert.deepEqual(worker.next(14_000, { tip: "c1", trusted: true, pending: 0, held: false }), {
      kind: "send",
      tip: "c1",
    });
    worker.send(
      "c1",
      15_000,
      () => true,
      () => undefined,
    );
    assert.equal(sent.at(-1)?.targets[0]?.reason, "Repair");
    // The flush published the edit, so the Repair's own write of it is its echo, not withheld again.
    assert.equal(worker.admits("shop/apps", settings, flux(16_000), 16_000), false);
    assert.deepEqual(judged, ["withheld", "echo"]);
    assert.deepEqual(repairs, [true], "the claim says repairPending while the Repair is due or out");
    worker.reported({ attempt: sent.at(-1)!, outcome: { kind: "succeeded", commit: "c1" } }, 17_000);
    assert.deepEqual(repairs, [true, false], "answered once the Repair succeeded");
  });

  it("a refused edit guards nothing: the apply that reverts it is meant", () => {
    const { worker, judged, sendAt } = applies();
    sendAt(10_000);
    assert.equal(worker.admits("shop/apps", settings, person(12_000), 12_000), true);
    worker.refused("shop/apps", settings, "plaintext_sensitive");
    assert.equal(worker.admits("shop/apps", settings, flux(13_000), 13_000), false);
    assert.deepEqual(judged, ["echo"]);
  });

  it("the applier and a person in the same second could be the edit itself: mirrored, as ambiguous", () => {
    const { worker, judged, sendAt } = applies();
    sendAt(10_000);
    const tie = [...flux(12_000), ...person(12_000)];
    assert.equal(worker.admits("shop/apps", settings, tie, 12_000), true);
    assert.deepEqual(judged, ["ambiguous"]);
  });

  it("the window stays open 10 s after the attempt ends; past that, the applier's write is late and mirrored", () => {
    const { worker, judged, sendAt, sent } = applies();
    sendAt(10_000);
    worker.reported({ attempt: sent[0]!, outcome: { kind: "succeeded", commit: "c1" } }, 20_000);
    assert.equal(
      worker.admits("shop/apps", settings, flux(25_000), 25_000),
      false,
      "inside the grace: an echo",
    );
    const after = 20_000 + windowGraceMs + 1;
    assert.equal(worker.admits("shop/apps", settings, flux(after), after), true, "after it: late");
    assert.deepEqual(judged, ["echo", "late"]);
  });

  it("a folder no claim applies, and a person's write, are mirrored without judgement", () => {
    const { worker, judged, sendAt } = applies();
    sendAt(10_000);
    assert.equal(worker.admits("shop/other", settings, flux(11_000), 11_000), true);
    assert.equal(worker.admits("shop/apps", configMapIdentity("x", "shop"), person(11_000), 11_000), true);
    assert.deepEqual(judged, []);
  });
});
