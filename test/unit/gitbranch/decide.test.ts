import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { GitBranch, GitProvider } from "../../../generated/v1alpha3/index.ts";
import type { Candidate } from "../../../internal/gitbranch/branchclaim.ts";
import { admitBranch, providerRefOf } from "../../../internal/gitbranch/admission.ts";
import {
  decideBranch,
  proofIsFresh,
  workerReadyKey,
  type BranchFacts,
} from "../../../internal/gitbranch/decide.ts";
import type { RemoteCheck } from "../../../internal/gitprovider/remotecheck.ts";
import type { ConditionUpdate } from "../../../internal/operator/conditions.ts";

const branch = (name: string, spec: Partial<GitBranch["spec"]> = {}): GitBranch => ({
  apiVersion: "configbutler.ai/v1alpha3",
  kind: "GitBranch",
  metadata: { name, namespace: "team-a", uid: `uid-${name}` },
  spec: { gitProviderRef: { name: "repo" }, branch: "main", ...spec },
});
const provider = (allowedGitBranches?: GitProvider["spec"]["allowedGitBranches"]): GitProvider => ({
  apiVersion: "configbutler.ai/v1alpha3",
  kind: "GitProvider",
  metadata: { name: "repo", namespace: "team-a" },
  spec: { url: "https://git.example.com/org/repo.git", allowedGitBranches },
});
const sameNamespaceMain = [{ consumerNamespaces: { from: "Same" as const }, branches: ["main", "env/**"] }];
const find = (conditions: ConditionUpdate[], type: string) => conditions.find((c) => c.type === type)!;

describe("GitBranch admission", () => {
  it("the GitProvider is in the GitBranch's own namespace unless the reference names another", () => {
    assert.deepEqual(providerRefOf(branch("a")), { namespace: "team-a", name: "repo" });
    assert.deepEqual(providerRefOf(branch("a", { gitProviderRef: { name: "p", namespace: "platform" } })), {
      namespace: "platform",
      name: "p",
    });
  });

  it("a missing GitProvider is GitProviderNotFound", () => {
    const a = admitBranch(branch("a"), undefined, {});
    assert.equal(a.admitted, false);
    assert.equal(!a.admitted && a.reason, "GitProviderNotFound");
  });

  it("a provider without allowedGitBranches admits not even its own namespace", () => {
    const a = admitBranch(branch("a"), provider(undefined), {});
    assert.equal(!a.admitted && a.reason, "NamespaceNotAuthorized");
    assert.match(a.message, /no spec.allowedGitBranches/);
  });

  it("a branch no admitting grant's pattern matches is BranchNotAllowed, naming the patterns", () => {
    const a = admitBranch(branch("a", { branch: "feature/x" }), provider(sameNamespaceMain), {});
    assert.equal(!a.admitted && a.reason, "BranchNotAllowed");
    assert.match(a.message, /only "main", "env\/\*\*", and "feature\/x" matches none/);
  });

  it("an admitted namespace and branch pass", () => {
    assert.equal(
      admitBranch(branch("a", { branch: "env/prod/eu" }), provider(sameNamespaceMain), {}).admitted,
      true,
    );
  });
});

describe("GitBranch status", () => {
  const holderOlder: Candidate = {
    uid: "uid-old",
    namespace: "team-a",
    name: "old",
    createdAt: "2026-01-01T00:00:00Z",
  };
  const self = { uid: "uid-a", namespace: "team-a" };
  const mine: Candidate = { ...holderOlder, uid: "uid-a", name: "a" };
  const checked = (
    check: RemoteCheck,
    holder: Candidate | undefined,
  ): Extract<BranchFacts, { stage: "checked" }> => ({
    stage: "checked",
    admission: { admitted: true, provider: provider(sameNamespaceMain), message: "admitted" },
    check,
    context: { url: "https://git.example.com/org/repo.git", provider: "team-a/repo", secret: "team-a/creds" },
    repository: "https://git.example.com/org/repo",
    branch: "main",
    self,
    holder,
  });

  it("the holder that proved a push session is Ready and BranchClaimed", () => {
    const d = decideBranch(checked({ kind: "answered" }, mine), 2);
    assert.equal(find(d.conditions, "Ready").status, "True");
    assert.equal(find(d.conditions, "BranchClaimed").status, "True");
    assert.equal(find(d.conditions, "Validated").status, "True");
    assert.equal(d.recheck, "steady");
  });

  it("a younger candidate reports BranchConflict, naming the holder in its own namespace", () => {
    const d = decideBranch(checked({ kind: "answered" }, holderOlder), 2);
    assert.equal(find(d.conditions, "Ready").status, "False");
    assert.equal(find(d.conditions, "Ready").reason, "BranchConflict");
    assert.equal(find(d.conditions, "BranchClaimed").reason, "BranchConflict");
    assert.match(find(d.conditions, "Ready").message, /^GitBranch old holds branch "main"/);
  });

  it("a holder in another namespace is not named", () => {
    const d = decideBranch(checked({ kind: "answered" }, { ...holderOlder, namespace: "team-b" }), 2);
    assert.match(find(d.conditions, "Ready").message, /^A GitBranch in another namespace holds/);
  });

  it("a holder whose proof failed keeps BranchClaimed but is not Ready", () => {
    const d = decideBranch(checked({ kind: "refused", status: 401 }, mine), 2);
    assert.equal(find(d.conditions, "BranchClaimed").status, "True");
    assert.equal(find(d.conditions, "Ready").reason, "PushSessionFailed");
    assert.equal(find(d.conditions, "Stalled").status, "True");
  });

  it("a read-only credential is PushSessionFailed and claims nothing", () => {
    const d = decideBranch(checked({ kind: "refused", status: 403 }, undefined), 2);
    assert.equal(find(d.conditions, "Ready").reason, "PushSessionFailed");
    assert.equal(find(d.conditions, "BranchClaimed").status, "False");
    assert.match(find(d.conditions, "Ready").message, /may read the repository but not push to it/);
    assert.equal(d.recheck, "blocked");
  });

  it("a network failure retries with backoff and is not Stalled", () => {
    const d = decideBranch(checked({ kind: "failed", transient: true, detail: "boom" }, undefined), 2);
    assert.equal(find(d.conditions, "Stalled").status, "False");
    assert.equal(find(d.conditions, "Reconciling").status, "True");
    assert.equal(d.recheck, "backoff");
  });

  const since = new Date("2026-02-01T10:00:00Z");
  const failing = (parentMissing: boolean) => ({
    retainedWrites: 3,
    retainedBytes: 4096,
    intakePaused: false,
    outage: {
      since,
      error: parentMissing ? "the parent branch later does not exist on the remote" : "connect ECONNREFUSED",
      nextAttemptAt: since.getTime() + 10_000,
      ...(parentMissing ? { parentMissing } : {}),
    },
  });

  it("a holder whose worker's publications fail is not Ready, and says what the GitTargets say", () => {
    const d = decideBranch({ ...checked({ kind: "answered" }, mine), worker: failing(false) }, 2);
    const ready = find(d.conditions, "Ready");
    assert.equal(ready.status, "False");
    assert.equal(ready.reason, "RemoteUnreachable");
    assert.equal(
      ready.message,
      "The Git remote has failed since 2026-02-01T10:00:00.000Z: connect ECONNREFUSED. 3 decided write(s) are kept and retried.",
    );
    assert.equal(find(d.conditions, "Reconciling").status, "True");
    assert.equal(find(d.conditions, "Stalled").status, "False");
    assert.equal(find(d.conditions, "BranchClaimed").status, "True");
  });

  it("a local fault of the worker's clone is LocalWriteFailed on the GitBranch, not RemoteUnreachable", () => {
    const local = failing(false);
    const worker = {
      ...local,
      outage: { ...local.outage, error: "ENOENT: no such file", fault: "local" as const },
    };
    const d = decideBranch({ ...checked({ kind: "answered" }, mine), worker }, 2);
    const ready = find(d.conditions, "Ready");
    assert.equal(ready.reason, "LocalWriteFailed");
    assert.match(ready.message, /local fault/);
    assert.equal(find(d.conditions, "Reconciling").status, "True");
  });

  it("a branch that keeps moving under the worker's pushes is RemoteMoving and Reconciling, never RemoteUnreachable", () => {
    const worker = {
      retainedWrites: 2,
      retainedBytes: 2048,
      intakePaused: false,
      contention: { since, moves: 7, nextAttemptAt: since.getTime() + 300 },
    };
    const d = decideBranch({ ...checked({ kind: "answered" }, mine), worker }, 2);
    const ready = find(d.conditions, "Ready");
    assert.equal(ready.reason, "RemoteMoving");
    assert.equal(ready.status, "Unknown");
    assert.match(ready.message, /^The branch moved 7 times while we pushed, since 2026-02-01T10:00:00.000Z/);
    assert.match(ready.message, /2 decided write\(s\) are kept and pushed again after a short pause/);
    assert.equal(find(d.conditions, "Reconciling").status, "True");
    assert.equal(find(d.conditions, "Stalled").status, "False");
    assert.notEqual(workerReadyKey(worker), "", "contention wakes the GitBranch");
    assert.notEqual(
      workerReadyKey(worker),
      workerReadyKey({ ...worker, contention: { ...worker.contention, moves: 8 } }),
    );
    const unreachable = { ...failing(false), contention: worker.contention };
    const both = decideBranch({ ...checked({ kind: "answered" }, mine), worker: unreachable }, 2);
    assert.equal(find(both.conditions, "Ready").reason, "RemoteUnreachable", "an outage says what it is");
  });

  it("a worker that publishes again makes the holder Ready", () => {
    const healthy = { retainedWrites: 0, retainedBytes: 0, intakePaused: false };
    const d = decideBranch({ ...checked({ kind: "answered" }, mine), worker: healthy }, 2);
    assert.equal(find(d.conditions, "Ready").status, "True");
  });

  it("a missing parent is ParentBranchNotFound and Stalled, naming the parent and what to do", () => {
    const facts = { ...checked({ kind: "answered" }, mine), parentBranch: "later", worker: failing(true) };
    const d = decideBranch(facts, 2);
    const ready = find(d.conditions, "Ready");
    assert.equal(ready.reason, "ParentBranchNotFound");
    assert.equal(find(d.conditions, "Stalled").status, "True");
    assert.equal(find(d.conditions, "Reconciling").status, "False");
    assert.match(
      ready.message,
      /parent branch "later" \(spec.parentBranch\) does not exist either: create it/,
    );
    assert.match(ready.message, /3 decided write\(s\) are kept/);
  });

  it("a default branch that does not resolve is ParentBranchNotFound too", () => {
    const d = decideBranch({ ...checked({ kind: "answered" }, mine), worker: failing(true) }, 2);
    assert.equal(find(d.conditions, "Ready").reason, "ParentBranchNotFound");
    assert.match(find(d.conditions, "Ready").message, /default branch does not resolve/);
  });

  it("a holder with a durable queue says whether Redis keeps its accepted writes, and Redis away leaves Ready alone", () => {
    const healthy = { retainedWrites: 0, retainedBytes: 0, intakePaused: false };
    const kept = decideBranch(
      { ...checked({ kind: "answered" }, mine), worker: { ...healthy, durableQueue: { available: true } } },
      2,
    );
    assert.equal(find(kept.conditions, "DurableQueue").status, "True");
    const since = new Date("2026-02-01T10:00:00Z");
    const away = { available: false as const, error: "Connection is closed.", since };
    const lost = decideBranch(
      { ...checked({ kind: "answered" }, mine), worker: { ...healthy, durableQueue: away } },
      2,
    );
    const queue = find(lost.conditions, "DurableQueue");
    assert.equal(queue.status, "False");
    assert.equal(queue.reason, "DurableQueueUnavailable");
    assert.match(queue.message, /since 2026-02-01T10:00:00.000Z: Connection is closed\./);
    assert.match(queue.message, /Check that Redis at --redis-addr is up/);
    assert.equal(find(lost.conditions, "Ready").status, "True");
    // Without a queue (no --redis-addr), and on a GitBranch that does not hold, no condition.
    const plain = decideBranch({ ...checked({ kind: "answered" }, mine), worker: healthy }, 2);
    assert.equal(
      plain.conditions.find((c) => c.type === "DurableQueue"),
      undefined,
    );
    const other = decideBranch({ ...checked({ kind: "answered" }, holderOlder), worker: healthy }, 2);
    assert.equal(
      other.conditions.find((c) => c.type === "DurableQueue"),
      undefined,
    );
    // Its turning wakes the GitBranch.
    assert.notEqual(workerReadyKey({ ...healthy, durableQueue: away }), workerReadyKey(healthy));
    assert.notEqual(
      workerReadyKey({ ...healthy, durableQueue: away }),
      workerReadyKey({ ...healthy, durableQueue: { available: true } }),
    );
  });

  it("only an outage in a worker's report wakes its GitBranch: a backlog that comes and goes does not", () => {
    const healthy = { retainedWrites: 0, retainedBytes: 0, intakePaused: false };
    assert.equal(workerReadyKey(undefined), "");
    assert.equal(workerReadyKey({ ...healthy, retainedWrites: 4 }), "");
    assert.notEqual(workerReadyKey(failing(false)), "");
    assert.notEqual(workerReadyKey(failing(false)), workerReadyKey(failing(true)));
    assert.notEqual(workerReadyKey(failing(false)), workerReadyKey({ ...failing(false), retainedWrites: 4 }));
  });

  it("a candidate that does not hold the branch reports no worker's outage", () => {
    const d = decideBranch({ ...checked({ kind: "answered" }, holderOlder), worker: failing(false) }, 2);
    assert.equal(find(d.conditions, "Ready").reason, "BranchConflict");
  });

  it("a GitBranch that is not admitted is Stalled, not Validated, and waits for a watch", () => {
    const d = decideBranch(
      { stage: "rejected", admission: { admitted: false, reason: "BranchNotAllowed", message: "no" } },
      2,
    );
    assert.equal(find(d.conditions, "Validated").status, "False");
    assert.equal(find(d.conditions, "Ready").reason, "BranchNotAllowed");
    assert.equal(find(d.conditions, "BranchClaimed").status, "False");
    assert.equal(d.recheck, undefined);
  });
});

describe("push-session proofs", () => {
  it("a proof is re-used within the steady interval while nothing it was proved with changed", () => {
    const proof = { fingerprint: "f1", atMs: 1_000 };
    assert.equal(proofIsFresh(proof, "f1", 1_000 + 299_999, 300_000), true);
    assert.equal(proofIsFresh(proof, "f1", 1_000 + 300_000, 300_000), false);
    assert.equal(proofIsFresh(proof, "f2", 1_001, 300_000), false);
    assert.equal(proofIsFresh(undefined, "f1", 1_001, 300_000), false);
  });
});
