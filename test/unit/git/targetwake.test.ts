import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { BranchState } from "../../../internal/git/worker/report.ts";
import type { FolderReport } from "../../../internal/git/folder/targetfolders.ts";
import { branchWakesTarget, reportWakesTarget } from "../../../internal/git/targetwake.ts";

const since = new Date("2026-12-01T10:00:00Z");
const quiet = (retainedWrites: number): BranchState => ({
  retainedWrites,
  retainedBytes: 100 * retainedWrites,
  intakePaused: false,
});

function written(commit: string, documents: number): FolderReport {
  return {
    refusedWrites: [],
    encryptedDocuments: 0,
    renderGate: { status: "True", reason: "Succeeded", message: "the folder renders what is live" },
    placement: { source: "KustomizeRoot", kustomizeRoot: "apps", documents, commit, observedAt: new Date() },
  };
}

describe("delivery is not publication: a GitTarget is woken by what its status shows", () => {
  it("a local commit moves where the folder was read, which wakes nothing: the push shows it", () => {
    assert.equal(reportWakesTarget(written("aaa", 10), written("bbb", 11), true), false);
  });

  it("a read of the folder wakes the target, even when it reads the same", () => {
    assert.equal(reportWakesTarget(written("aaa", 10), written("aaa", 10), false), true);
  });

  it("a write that refuses an object, or moves the kustomize root, wakes the target", () => {
    const refused = {
      ...written("bbb", 10),
      refusedWrites: [
        {
          key: "/ConfigMap/shop/web",
          message: "ConfigMap shop/web: no such folder",
          reason: "placement_refused",
        },
      ],
    };
    assert.equal(reportWakesTarget(written("aaa", 10), refused, true), true);
    const moved = written("bbb", 10);
    moved.placement!.kustomizeRoot = "apps/base";
    assert.equal(reportWakesTarget(written("aaa", 10), moved, true), true);
  });

  it("a target's first report wakes it", () => {
    assert.equal(reportWakesTarget(undefined, written("aaa", 10), true), true);
  });

  it("the backlog alone moves with every write, and wakes nothing", () => {
    assert.equal(branchWakesTarget(quiet(3), quiet(4)), false);
    assert.equal(branchWakesTarget(undefined, quiet(1)), false);
  });

  it("an outage starting or ending wakes the target, and so do the writes it holds", () => {
    const down: BranchState = {
      ...quiet(3),
      outage: { since, error: "connection refused", nextAttemptAt: 0 },
    };
    assert.equal(branchWakesTarget(quiet(3), down), true);
    assert.equal(branchWakesTarget(down, { ...down, retainedWrites: 4 }), true);
    assert.equal(branchWakesTarget(down, quiet(0)), true);
  });

  it("the branch moving under a push again wakes the target, with how often it moved", () => {
    const moving = (moves: number): BranchState => ({
      ...quiet(2),
      contention: { since, moves, nextAttemptAt: 0 },
    });
    assert.equal(branchWakesTarget(quiet(2), moving(1)), true);
    assert.equal(branchWakesTarget(moving(1), moving(2)), true);
    assert.equal(
      branchWakesTarget(moving(2), { ...moving(2), contention: { since, moves: 2, nextAttemptAt: 99 } }),
      false,
    );
  });
});
