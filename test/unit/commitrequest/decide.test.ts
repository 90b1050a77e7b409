// The controller's next step for a CommitRequest, decided from the object as stored.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CommitRequest } from "../../../generated/v1alpha3/index.ts";
import {
  decideStep,
  deleteAfterAnnotation,
  saveRequestOf,
  withdrawAt,
  type RequestFacts,
} from "../../../internal/commitrequest/decide.ts";

const created = Date.parse("2026-12-02T10:00:00Z");
const request = (status?: CommitRequest["status"], annotations?: Record<string, string>): CommitRequest => ({
  apiVersion: "configbutler.ai/v1alpha3",
  kind: "CommitRequest",
  metadata: {
    name: "save",
    namespace: "team-a",
    uid: "u1",
    creationTimestamp: "2026-12-02T10:00:00Z" as unknown as Date,
    ...(annotations ? { annotations } : {}),
  },
  spec: { gitTargetRef: { name: "configs" } },
  ...(status ? { status } : {}),
});
const ready = (status: "True" | "False" | "Unknown", reason: string) => ({
  conditions: [{ type: "Ready", status, reason, message: "", lastTransitionTime: "" }],
});
const facts = (overrides: Partial<RequestFacts> = {}): RequestFacts => ({
  now: created + 1_000,
  owner: true,
  targetFound: true,
  deletesFinished: true,
  report: undefined,
  retentionMs: 60_000,
  ...overrides,
});

describe("a CommitRequest's next step", () => {
  it("the owner claims a new request: admission and the author come before any attach", () => {
    assert.deepEqual(decideStep(request(), facts()), { kind: "claim" });
  });

  it("another path writes nothing but GitTargetNotFound, once attachTimeout has passed, into an empty status", () => {
    assert.deepEqual(decideStep(request(), facts({ owner: false })), { kind: "wait" });
    assert.deepEqual(decideStep(request(), facts({ targetFound: false })), { kind: "wait", afterMs: 4_000 });
    assert.deepEqual(decideStep(request(), facts({ targetFound: false, now: created + 5_000 })), {
      kind: "targetNotFound",
    });
    const touched = request({
      conditions: [{ type: "Other", status: "True", reason: "X", message: "", lastTransitionTime: "" }],
    });
    assert.deepEqual(decideStep(touched, facts({ targetFound: false, now: created + 9_000 })), {
      kind: "wait",
    });
  });

  it("a claimed request reports the worker's phase, and WaitingForWorker before the worker says anything", () => {
    const claimed = request(ready("Unknown", "Saving"));
    assert.deepEqual(decideStep(claimed, facts()), { kind: "progress", phase: "WaitingForWorker" });
    assert.deepEqual(decideStep(claimed, facts({ report: { phase: "WaitingForPush", message: "down" } })), {
      kind: "progress",
      phase: "WaitingForPush",
      message: "down",
    });
    assert.deepEqual(decideStep(claimed, facts({ report: { outcome: { reason: "NoWindow" } } })), {
      kind: "finish",
      outcome: { reason: "NoWindow" },
    });
  });

  it("withdrawn attachTimeout + maxDuration + 120s after creation, only while no worker holds it", () => {
    const claimed = request(ready("Unknown", "WaitingForWindow"));
    const due = withdrawAt(claimed);
    assert.equal(due, created + 5_000 + 2_000 + 120_000);
    assert.equal(decideStep(claimed, facts({ now: due - 1 })).kind, "progress");
    assert.deepEqual(decideStep(claimed, facts({ now: due })), { kind: "withdraw" });
    const held = facts({ now: due + 60_000, report: { phase: "WaitingForPush" } });
    assert.equal(decideStep(claimed, held).kind, "progress", "only the worker ends a request it holds");
  });

  it("a finished request is stamped delete-after, and deleted once past it, where this path deletes", () => {
    const done = request(ready("True", "Committed"));
    assert.deepEqual(decideStep(done, facts()), { kind: "stamp", deleteAfter: new Date(created + 61_000) });
    const stamped = request(ready("True", "Committed"), { [deleteAfterAnnotation]: "2026-12-02T10:02:00Z" });
    assert.deepEqual(decideStep(stamped, facts({ now: created + 60_000 })), {
      kind: "wait",
      afterMs: 60_000,
    });
    assert.deepEqual(decideStep(stamped, facts({ now: created + 120_000 })), { kind: "delete" });
    assert.deepEqual(decideStep(done, facts({ deletesFinished: false })), { kind: "wait" });
    const stalled = request({
      conditions: [
        { type: "Stalled", status: "True", reason: "FinalizeFailed", message: "", lastTransitionTime: "" },
      ],
    });
    assert.equal(decideStep(stalled, facts()).kind, "stamp", "Stalled=True is finished too");
  });

  it("the window settings default as the API does: CurrentOrNext, 5s to attach, 2s to collect, no idle timeout", () => {
    const save = saveRequestOf(request(), "team-a/configs", "alice");
    assert.deepEqual(save, {
      id: "u1",
      target: "team-a/configs",
      actor: "alice",
      mode: "CurrentOrNext",
      attachTimeoutMs: 5_000,
      maxDurationMs: 2_000,
      whenNothingToCommit: "Resolve",
    });
  });
});
