import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { GitBranch, GitTarget, KubeProvider } from "../../../generated/v1alpha3/index.ts";
import { reconcileRequest, targetConditions, type TargetWorld } from "../../../internal/gittarget/decide.ts";
import { readyStatus } from "./fixtures.ts";

function world(suspend: boolean): TargetWorld {
  const target: GitTarget = {
    apiVersion: "configbutler.ai/v1alpha3",
    kind: "GitTarget",
    metadata: { name: "t", namespace: "team-a", uid: "t", generation: 2 },
    spec: { gitBranchRef: { name: "main" }, kubeProviderRef: { name: "p" }, path: "clusters/a", suspend },
  };
  const provider: KubeProvider = {
    apiVersion: "configbutler.ai/v1alpha3",
    kind: "KubeProvider",
    metadata: { name: "p", namespace: "team-a" },
    spec: { inCluster: {} },
    status: readyStatus,
  };
  const branch: GitBranch = {
    apiVersion: "configbutler.ai/v1alpha3",
    kind: "GitBranch",
    metadata: { name: "main", namespace: "team-a" },
    spec: { gitProviderRef: { name: "repo" }, branch: "main" },
    status: readyStatus,
  };
  return { target, provider, branch, namespaceLabels: {}, sameBranch: [target] };
}

const running = { total: 1, running: 1, replaying: 0, blocked: 0 };
const writing = {
  attached: true,
  refused: [],
  renderGate: { status: "True" as const, reason: "Succeeded", message: "" },
};

describe("GitTarget gates", () => {
  it("a suspended target is not Ready, and neither reconciling nor stalled: it waits for a person", () => {
    const trio = (suspend: boolean) =>
      targetConditions(world(suspend), undefined, running, writing)
        .filter((c) => ["Ready", "Reconciling", "Stalled"].includes(c.type))
        .map((c) => `${c.type}=${c.status} ${c.reason}`);
    assert.deepEqual(trio(true), [
      "Ready=False Suspended",
      "Reconciling=False Suspended",
      "Stalled=False Suspended",
    ]);
    assert.deepEqual(trio(false), [
      "Ready=True Succeeded",
      "Reconciling=False Succeeded",
      "Stalled=False Succeeded",
    ]);
  });

  it("a requestedAt is handled once its folder was read again, and the worker is asked once", () => {
    const facts = {
      requested: "t1",
      lastHandled: undefined,
      asked: undefined,
      attached: true,
      folderRead: undefined,
    };
    assert.deepEqual(reconcileRequest(facts), { ask: "t1", handled: undefined });
    assert.deepEqual(reconcileRequest({ ...facts, asked: "t1" }), { ask: undefined, handled: undefined });
    assert.deepEqual(reconcileRequest({ ...facts, asked: "t1", folderRead: "t1" }), {
      ask: undefined,
      handled: "t1",
    });
    // No worker writes the folder: reading the references again is the whole re-check.
    assert.deepEqual(reconcileRequest({ ...facts, attached: false }), { ask: undefined, handled: "t1" });
    // Handled before, such as by the process before a restart: nothing to do, and it stays recorded.
    assert.deepEqual(reconcileRequest({ ...facts, lastHandled: "t1" }), { ask: undefined, handled: "t1" });
    assert.deepEqual(reconcileRequest({ ...facts, requested: undefined, lastHandled: "t0" }), {
      ask: undefined,
      handled: "t0",
    });
  });

  it("a branch somebody keeps pushing to is RemoteMoving and Reconciling, not RemoteUnreachable and not Stalled", () => {
    const since = new Date("2026-02-01T10:00:00Z");
    const contention = { since, moves: 5, retainedWrites: 1 };
    const conditions = targetConditions(world(false), undefined, running, { ...writing, contention });
    const trio = conditions
      .filter((c) => ["Ready", "Reconciling", "Stalled"].includes(c.type))
      .map((c) => `${c.type}=${c.status} ${c.reason}`);
    assert.deepEqual(trio, [
      "Ready=Unknown RemoteMoving",
      "Reconciling=True RemoteMoving",
      "Stalled=False RemoteMoving",
    ]);
    assert.match(
      conditions.find((c) => c.type === "Ready")?.message ?? "",
      /^The branch moved 5 times while we pushed, since 2026-02-01T10:00:00.000Z: .* 1 decided write\(s\) are kept/,
    );
  });
});
