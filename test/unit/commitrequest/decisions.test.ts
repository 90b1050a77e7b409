import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AttachQueue, windowMatches, type AttachRequest } from "../../../internal/commitrequest/attach.ts";
import { outcomeConditions, phaseConditions } from "../../../internal/commitrequest/outcome.ts";
import { admitsCommitRequest } from "../../../internal/commitrequest/admission.ts";
import type { GitTarget } from "../../../generated/v1alpha3/index.ts";

const target = "team-a/configs";
const request = (overrides: Partial<AttachRequest> = {}): AttachRequest => ({
  id: "r1",
  target,
  actor: "alice",
  mode: "CurrentOrNext",
  attachTimeoutMs: 2_000,
  ...overrides,
});
const window = (actor: string | undefined, attached = false) => ({ target, actor, attached });

describe("a CommitRequest attaches only to its own author's window", () => {
  it("the same GitTarget, the same named actor, and the same names-an-actor state", () => {
    assert.equal(windowMatches({ target, actor: "alice" }, { target, actor: "alice" }), true);
    assert.equal(
      windowMatches({ target, actor: "alice" }, { target, actor: "bob" }),
      false,
      "another user's work",
    );
    assert.equal(
      windowMatches({ target, actor: "alice" }, { target: "team-a/other", actor: "alice" }),
      false,
    );
    assert.equal(
      windowMatches({ target, actor: undefined }, { target, actor: undefined }),
      true,
      "a request naming nobody takes a configured-author or unresolved window",
    );
    assert.equal(
      windowMatches({ target, actor: undefined }, { target, actor: "alice" }),
      false,
      "never a named one",
    );
    assert.equal(windowMatches({ target, actor: "alice" }, { target, actor: undefined }), false);
  });

  it("CurrentOrNext attaches to the window open at registration, even with attachTimeout 0s", () => {
    const queue = new AttachQueue();
    assert.deepEqual(queue.register(request({ attachTimeoutMs: 0 }), 0, window("alice")), { kind: "attach" });
  });

  it("Next closes the open window first and waits for the next one", () => {
    const queue = new AttachQueue();
    assert.deepEqual(queue.register(request({ mode: "Next" }), 0, window("alice")), {
      kind: "closeThenWait",
    });
    assert.deepEqual(queue.windowOpened(window("alice"), 500), { expired: [], attach: "r1" });
  });

  it("registering again is idempotent: a re-sent attach restarts nothing and closes nothing again", () => {
    const queue = new AttachQueue();
    queue.register(request({ mode: "Next" }), 0, window("alice"));
    assert.deepEqual(queue.register(request({ mode: "Next" }), 1_500, window("alice")), { kind: "known" });
    assert.deepEqual(
      queue.expire(2_000),
      [["r1", "NoWindow"]],
      "the deadline ran from the first registration",
    );
  });

  it("a window carries at most one request, and waiting requests are served first come, first served", () => {
    const queue = new AttachQueue();
    queue.register(request({ id: "first" }), 0, undefined);
    queue.register(request({ id: "second" }), 10, undefined);
    assert.equal(queue.windowOpened(window("alice"), 100).attach, "first");
    assert.equal(
      queue.windowOpened(window("alice", true), 200).attach,
      undefined,
      "the window has its request",
    );
    assert.equal(queue.windowOpened(window("alice"), 300).attach, "second");
  });

  it("expiry wins a tie with a matching window, and an expired request never takes a later one", () => {
    const queue = new AttachQueue();
    queue.register(request(), 0, undefined);
    assert.deepEqual(queue.windowOpened(window("alice"), 2_000), {
      expired: [["r1", "NoWindow"]],
      attach: undefined,
    });
    assert.equal(queue.windowOpened(window("alice"), 2_500).attach, undefined);
  });

  it("a wait that saw only another author's window ends WindowMismatch; one that saw none, NoWindow", () => {
    const queue = new AttachQueue();
    queue.register(request({ id: "mismatch" }), 0, window("bob"));
    queue.register(request({ id: "none", target: "team-a/quiet" }), 0, undefined);
    queue.windowOpened(window("carol"), 500);
    assert.deepEqual(queue.expire(2_000), [
      ["mismatch", "WindowMismatch"],
      ["none", "NoWindow"],
    ]);
    assert.deepEqual(new AttachQueue().register(request({ attachTimeoutMs: 0 }), 0, window("bob")), {
      kind: "resolved",
      outcome: "WindowMismatch",
    });
  });

  it("a withdraw removes a waiting request, and is a no-op for one the worker holds", () => {
    const queue = new AttachQueue();
    queue.register(request({ id: "held" }), 0, undefined);
    queue.register(request({ id: "waiting", actor: "bob" }), 0, undefined);
    queue.windowOpened(window("alice"), 100);
    assert.equal(queue.withdraw("held"), false);
    assert.equal(queue.withdraw("waiting"), true);
    assert.equal(queue.size, 0);
    assert.deepEqual(
      queue.register(request({ id: "waiting" }), 200, undefined),
      { kind: "known" },
      "never registered again",
    );
    assert.equal(queue.nextDeadline(), undefined);
  });
});

describe("a CommitRequest's outcome as conditions (the seeds' outcome table)", () => {
  const by = (conditions: ReturnType<typeof outcomeConditions>) =>
    Object.fromEntries(conditions.map((c) => [c.type, `${c.status}/${c.reason}`]));

  it("a pushed commit is Ready and Pushed; a no-commit outcome is Ready and not Pushed", () => {
    assert.deepEqual(by(outcomeConditions({ reason: "Committed", commit: "abc", branch: "main" })), {
      Ready: "True/Committed",
      Stalled: "False/Committed",
      Reconciling: "False/Committed",
      Pushed: "True/Committed",
    });
    assert.equal(by(outcomeConditions({ reason: "AlreadyPresent" })).Pushed, "False/AlreadyPresent");
    assert.equal(by(outcomeConditions({ reason: "WindowMismatch" })).Ready, "True/WindowMismatch");
  });

  it("CommitEmpty's empty commit is Pushed, with NoWindow or AlreadyPresent as its reason", () => {
    const conditions = outcomeConditions({ reason: "NoWindow", commit: "e0", branch: "main" });
    assert.equal(by(conditions).Pushed, "True/NoWindow");
    assert.match(conditions[0]!.message, /empty commit e0/);
  });

  it("a failure is Stalled and not Ready, saying why", () => {
    const conditions = outcomeConditions({ reason: "FinalizeFailed", message: "the GitTarget is suspended" });
    assert.deepEqual(by(conditions), {
      Ready: "False/FinalizeFailed",
      Stalled: "True/FinalizeFailed",
      Reconciling: "False/FinalizeFailed",
      Pushed: "False/FinalizeFailed",
    });
    assert.equal(conditions[0]!.message, "the GitTarget is suspended");
  });

  it("the phases while it is served are Reconciling reasons", () => {
    assert.deepEqual(by(phaseConditions("WaitingForPush")), {
      Ready: "Unknown/WaitingForPush",
      Reconciling: "True/WaitingForPush",
      Stalled: "False/WaitingForPush",
    });
  });
});

describe("GitTarget.spec.allowedCommitRequests admits a CommitRequest", () => {
  const gitTarget = (allowedCommitRequests?: GitTarget["spec"]["allowedCommitRequests"]): GitTarget => ({
    apiVersion: "configbutler.ai/v1alpha3",
    kind: "GitTarget",
    metadata: { name: "configs", namespace: "team-a" },
    spec: {
      gitBranchRef: { name: "main" },
      kubeProviderRef: { name: "self" },
      path: "clusters/dev",
      ...(allowedCommitRequests ? { allowedCommitRequests } : {}),
    },
  });
  const control = (namespace: string, labels: Record<string, string> = {}) =>
    ({ cluster: "control", namespace, labels }) as const;

  it("omitted: requests in the target's own namespace on the control cluster, and nothing from a source", () => {
    assert.equal(admitsCommitRequest(gitTarget(), control("team-a")), true);
    assert.equal(admitsCommitRequest(gitTarget(), control("team-b")), false);
    assert.equal(admitsCommitRequest(gitTarget(), { cluster: "source", namespace: "team-a" }), false);
  });

  it("a written list is the whole policy, and [] admits none", () => {
    assert.equal(admitsCommitRequest(gitTarget([]), control("team-a")), false);
    const bySelector = gitTarget([
      { consumerNamespaces: { from: "Selector", selector: { matchLabels: { saves: "yes" } } } },
    ]);
    assert.equal(admitsCommitRequest(bySelector, control("ops", { saves: "yes" })), true);
    assert.equal(admitsCommitRequest(bySelector, control("team-a")), false);
  });

  it("consumerNamespaces speaks for the control cluster, sourceNamespaces for the source cluster", () => {
    const source = gitTarget([{ sourceNamespaces: { from: "Names", names: ["apps"] } }]);
    assert.equal(admitsCommitRequest(source, { cluster: "source", namespace: "apps" }), true);
    assert.equal(admitsCommitRequest(source, { cluster: "source", namespace: "other" }), false);
    assert.equal(admitsCommitRequest(source, control("apps")), false);
  });
});
