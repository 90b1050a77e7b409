// The worker's side of CommitRequest, decided as pure state: the desk's lifecycle, the window a
// request attaches to, and the outcome a push decides.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  SaveDesk,
  outcomeRetentionMs,
  type Report,
  type SaveRequest,
} from "../../../internal/commitrequest/desk.ts";
import { requestTimers, savedOutcome } from "../../../internal/git/worker/saves.ts";
import { CommitWindow } from "../../../internal/git/worker/window.ts";
import type { DecidedWrite, SaveOnWrite, TargetSettings } from "../../../internal/git/folder/writes.ts";

const target = "team-a/configs";
const request = (overrides: Partial<SaveRequest> = {}): SaveRequest => ({
  id: "r1",
  target,
  actor: undefined,
  mode: "CurrentOrNext",
  attachTimeoutMs: 5_000,
  maxDurationMs: 2_000,
  whenNothingToCommit: "Resolve",
  ...overrides,
});
const view = (attached = false) => ({ target, actor: undefined, attached });

function desk() {
  const reports: [string, Report][] = [];
  return { desk: new SaveDesk((id, report) => reports.push([id, report])), reports };
}

describe("a CommitRequest on its worker", () => {
  it("reports WaitingForWindow, then CollectingWindow once a window of its author opens", () => {
    const { desk: d, reports } = desk();
    assert.deepEqual(d.register(request(), 0, undefined), { kind: "wait" });
    assert.deepEqual(d.report("r1"), { phase: "WaitingForWindow" });
    const { attach } = d.windowOpened(view(), 1_000);
    assert.equal(attach?.id, "r1");
    assert.deepEqual(d.report("r1"), { phase: "CollectingWindow" });
    assert.deepEqual(
      reports.map(([, r]) => ("phase" in r ? r.phase : r.outcome.reason)),
      ["WaitingForWindow", "CollectingWindow"],
    );
  });

  it("a re-sent attach is recognized as the same request, held or finished", () => {
    const { desk: d } = desk();
    d.register(request(), 0, view());
    d.held("r1");
    assert.deepEqual(d.register(request(), 2_000, undefined), { kind: "known" });
    assert.deepEqual(d.report("r1"), { phase: "WaitingForPush" });
    d.finish("r1", { reason: "AlreadyPresent" }, 3_000);
    assert.deepEqual(
      d.register(request(), 4_000, view()),
      { kind: "known" },
      "it never takes a later window",
    );
  });

  it("a withdraw cancels a waiting request for good, and leaves one the worker holds to the worker", () => {
    const { desk: d } = desk();
    d.register(request({ id: "waiting" }), 0, undefined);
    d.register(request({ id: "held" }), 0, view());
    assert.equal(d.withdraw("waiting", 1_000, "gone"), "cancelled");
    assert.deepEqual(d.report("waiting"), { outcome: { reason: "FinalizeFailed", message: "gone" } });
    assert.equal(d.windowOpened(view(), 1_500).attach, undefined, "a withdrawn request never attaches");
    assert.equal(d.withdraw("held", 1_000, "gone"), "held");
    assert.deepEqual(d.report("held"), { phase: "CollectingWindow" });
  });

  it("a withdraw that arrives before its attach keeps the late attach from registering it", () => {
    const { desk: d } = desk();
    assert.equal(d.withdraw("r1", 0, "gone"), "cancelled");
    assert.deepEqual(d.register(request(), 10, view()), { kind: "known" });
    assert.equal(d.heldIds().length, 0);
  });

  it("a stopping worker gives back what it never acted on, and names what it holds", () => {
    const { desk: d } = desk();
    d.register(request({ id: "waiting" }), 0, undefined);
    d.register(request({ id: "held" }), 0, view());
    assert.deepEqual(d.giveBack(), ["waiting"]);
    assert.equal(d.report("waiting"), undefined, "the next worker registers it afresh");
    assert.deepEqual(d.heldIds(), ["held"]);
  });

  it("keeps an outcome for the controller's next read, then forgets it", () => {
    const { desk: d } = desk();
    d.register(request(), 0, view());
    d.finish("r1", { reason: "AlreadyPresent" }, 1_000);
    d.sweep(1_000 + outcomeRetentionMs - 1);
    assert.ok(d.report("r1"));
    d.sweep(1_000 + outcomeRetentionMs);
    assert.equal(d.report("r1"), undefined);
  });

  it("the budget counts waiting requests, so a stream of empty saves fills it too", () => {
    const { desk: d } = desk();
    d.register(request({ id: "a" }), 0, undefined);
    d.register(request({ id: "b", message: "twelve chars" }), 0, undefined);
    const waiting = d.waitingBytes();
    assert.ok(waiting >= 2 * 1024 + 12, `${waiting}`);
    d.windowOpened(view(), 100);
    assert.ok(d.waitingBytes() < waiting, "an attached request no longer waits");
  });
});

describe("the window a request attaches to", () => {
  it("takes the request's timers from the attach, so time spent waiting never shortens it", () => {
    const window = new CommitWindow<string>(1 << 20);
    window.add({ author: "a", target }, { idleTimeoutMs: 1_000, maxDurationMs: 10_000 }, "cm", "w", 1, 0);
    window.attachRequest("r1", requestTimers(request({ maxDurationMs: 3_000 })), 5_000);
    assert.equal(window.dueAt(), 8_000, "maxDuration from the attach; no idle timeout unless it sets one");
    assert.equal(window.tick(7_999), undefined);
    assert.equal(window.tick(8_000)?.request, "r1", "the closed window carries its request");
  });

  it("a window carries at most one request", () => {
    const window = new CommitWindow<string>(1 << 20);
    window.add({ author: "a", target }, { idleTimeoutMs: 1_000, maxDurationMs: 10_000 }, "cm", "w", 1, 0);
    window.attachRequest("r1", requestTimers(request()), 0);
    assert.throws(() => window.attachRequest("r2", requestTimers(request()), 0));
  });
});

describe("Committed and AlreadyPresent are decided by the push", () => {
  const settings = { key: target } as TargetSettings;
  const write = (save: Partial<SaveOnWrite>, changes = 1) =>
    ({
      target: settings,
      reason: "live",
      changes: Array.from({ length: changes }, () => ({ op: "delete" })),
      save: { id: "r1", commitEmpty: false, ...save },
    }) as DecidedWrite & { save: SaveOnWrite };

  it("a pushed commit is Committed; a write that made none is AlreadyPresent", () => {
    assert.deepEqual(savedOutcome(write({ commit: "abc" }), "main"), {
      reason: "Committed",
      commit: "abc",
      branch: "main",
    });
    assert.deepEqual(savedOutcome(write({}), "main"), { reason: "AlreadyPresent" });
  });

  it("CommitEmpty's empty commit is NoWindow when no window was reached, AlreadyPresent when it changed nothing", () => {
    assert.equal(
      savedOutcome(write({ commit: "e", empty: true, commitEmpty: true }, 0), "main").reason,
      "NoWindow",
    );
    assert.equal(
      savedOutcome(write({ commit: "e", empty: true, commitEmpty: true }), "main").reason,
      "AlreadyPresent",
    );
  });

  it("a refused write fails the request with the refusal", () => {
    const outcome = savedOutcome(write({ refused: "the folder has a kustomization namePrefix" }), "main");
    assert.equal(outcome.reason, "FinalizeFailed");
    assert.match("message" in outcome ? outcome.message : "", /namePrefix/);
  });
});
