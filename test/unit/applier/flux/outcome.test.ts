import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { fluxOutcome, reconcileRan, revisionHolds } from "../../../../internal/applier/flux/outcome.ts";
import type { KustomizationView } from "../../../../internal/applier/flux/view.ts";

const commit = "0123456789abcdef0123456789abcdef01234567";
const mark = { readyTransition: "2026-12-02T10:00:00Z" };

function after(ready: KustomizationView["ready"], lastAppliedRevision?: string): KustomizationView {
  return {
    ref: { namespace: "shop", name: "apps" },
    uid: "k1",
    resourceVersion: "12",
    suspended: false,
    source: { kind: "GitRepository", namespace: "shop", name: "state" },
    suspendAppliedBy: [],
    heldByUs: true,
    ...(ready ? { ready } : {}),
    ...(lastAppliedRevision ? { lastAppliedRevision } : {}),
  };
}
const ready = (status: string, reason = "ReconciliationSucceeded", at = "2026-12-02T10:00:05Z") => ({
  type: "Ready",
  status,
  reason,
  message: `${reason} message`,
  lastTransitionTime: at,
});

describe("the outcome of a Flux apply, read after the resume's token is handled", () => {
  it("no reconcile ran since the resume: Failed, so the worker asks again", () => {
    const outcome = fluxOutcome(
      after(ready("True", undefined, mark.readyTransition), `main@sha1:${commit}`),
      mark,
      commit,
      undefined,
    );
    assert.equal(outcome.kind, "failed");
  });

  it("a moved history entry proves a reconcile ran too", () => {
    const k = {
      ...after(ready("True", undefined, mark.readyTransition), `main@sha1:${commit}`),
      historyTop: "h2",
    };
    assert.equal(fluxOutcome(k, { ...mark, historyTop: "h1" }, commit, undefined).kind, "succeeded");
  });

  it("Ready=True with lastAppliedRevision holding the commit: Succeeded", () => {
    assert.deepEqual(fluxOutcome(after(ready("True"), `main@sha1:${commit}`), mark, commit, undefined), {
      kind: "succeeded",
      revision: `main@sha1:${commit}`,
      mismatch: false,
    });
  });

  it("Ready=True at the revision the GitRepository holds now, not the commit: Succeeded, as a mismatch", () => {
    const outcome = fluxOutcome(after(ready("True"), "main@sha1:ffff"), mark, commit, "main@sha1:ffff");
    assert.deepEqual(outcome, { kind: "succeeded", revision: "main@sha1:ffff", mismatch: true });
  });

  it("Ready=True at any other revision: Failed (the cached source lagged)", () => {
    assert.equal(
      fluxOutcome(after(ready("True"), "main@sha1:eeee"), mark, commit, "main@sha1:ffff").kind,
      "failed",
    );
  });

  it("Ready=False, DependencyNotReady: Failed, with a reason of its own", () => {
    const outcome = fluxOutcome(after(ready("False", "DependencyNotReady")), mark, commit, undefined);
    assert.equal(outcome.kind === "failed" && outcome.reason, "DependencyNotReady");
  });

  it("Ready=False for anything else, or no Ready: Failed", () => {
    assert.equal(fluxOutcome(after(ready("False", "BuildFailed")), mark, commit, undefined).kind, "failed");
    const none = { ...after(undefined), historyTop: "h2" };
    assert.equal(fluxOutcome(none, { historyTop: "h1" }, commit, undefined).kind, "failed");
  });

  it("recovered after a restart, with no mark: a reconcile ran if Ready moved in or after the second of the request", () => {
    const k = after(ready("True", undefined, "2026-12-02T10:00:05Z"), `main@sha1:${commit}`);
    assert.ok(reconcileRan(k, { requestedAt: "2026-12-02T10:00:05.700Z" }), "the same second");
    assert.ok(!reconcileRan(k, { requestedAt: "2026-12-02T10:00:06.100Z" }), "before the request");
    assert.equal(
      fluxOutcome(k, { requestedAt: "2026-12-02T10:00:04.000Z" }, commit, undefined).kind,
      "succeeded",
    );
    const history = {
      ...after(ready("True", undefined, "2026-12-02T09:00:00Z")),
      historyReconciledAt: "2026-12-02T10:00:09Z",
    };
    assert.ok(reconcileRan(history, { requestedAt: "2026-12-02T10:00:08.000Z" }), "or the top history entry");
  });

  it("a revision names a commit by its sha", () => {
    assert.ok(revisionHolds(`main@sha1:${commit}`, commit));
    assert.ok(revisionHolds(commit, commit));
    assert.ok(!revisionHolds("main@sha1:abc", commit));
  });
});
