import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { MaterializeResult } from "../../../../internal/git/folder/materialize.ts";
import {
  TargetFolders,
  type FolderReport,
  type Intake,
} from "../../../../internal/git/folder/targetfolders.ts";
import type { DecidedWrite, TargetSettings } from "../../../../internal/git/folder/writes.ts";
import { configMaps } from "../fixtures.ts";
import { configMapIdentity } from "../../../support/streams.ts";

const collection = configMaps;

const target: TargetSettings = {
  key: "apps/t",
  path: "clusters/dev",
  timers: { idleTimeoutMs: 0, maxDurationMs: 0 },
  prune: "OnEvent",
};

const identityOf = configMapIdentity;

const upsert = (name: string): Intake => ({
  target,
  item: {
    type: "upsert",
    collection,
    identity: identityOf(name),
    object: { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "apps" } },
  },
});

const snapshotWrite: DecidedWrite = {
  target,
  reason: "reconcile",
  changes: [],
  sweep: { collection, present: new Set() },
};

function folders() {
  const seen = {
    reports: [] as FolderReport[],
    dropped: [] as string[],
    resyncs: [] as (string[] | undefined)[],
  };
  const subject = new TargetFolders(
    { holdMs: 60_000, budgetBytes: 1_000 },
    {
      onReport: (_key, report) => seen.reports.push(report),
      onDropped: (_key, reason, count) => seen.dropped.push(`${reason} x${count}`),
      onPlaced: () => undefined,
      onResyncRequested: (_key, collections) => seen.resyncs.push(collections),
    },
  );
  return { subject, seen };
}

const result = (extra: Partial<MaterializeResult> = {}): MaterializeResult => ({
  placements: [],
  decided: [],
  ...extra,
});

describe("a branch worker's view of its target folders", () => {
  it("passes live items while no collection is replaying", () => {
    const { subject } = folders();
    assert.equal(subject.admit(upsert("a"), 10, 0).pass, true);
  });

  it("holds live items while a collection replays, and releases them in order once its snapshot measured clean", () => {
    const { subject, seen } = folders();
    subject.admit({ target, item: { type: "replaying", collection } }, 0, 0);
    assert.equal(seen.reports.at(-1)?.renderGate.status, "Unknown");
    assert.equal(subject.admit(upsert("a"), 10, 1).pass, false);
    // The snapshot supersedes what its own collection held before it arrived; what comes after is newer.
    assert.equal(
      subject.admit({ target, item: { type: "snapshot", collection, objects: [] } }, 0, 2).pass,
      true,
    );
    assert.equal(subject.admit(upsert("b"), 10, 3).pass, false);
    assert.equal(subject.admit(upsert("c"), 10, 4).pass, false);
    const released = subject.written(snapshotWrite, result({ divergences: [] }));
    assert.deepEqual(
      released.map((i) => i.item.type === "upsert" && i.item.identity.name),
      ["b", "c"],
    );
    assert.equal(seen.reports.at(-1)?.renderGate.status, "True");
    assert.deepEqual(seen.dropped, []);
  });

  it("releases held items of another collection, marked so they are not judged again", () => {
    const { subject } = folders();
    const other = { ...collection, key: "/secrets@apps" };
    subject.admit({ target, item: { type: "replaying", collection: other } }, 0, 0);
    subject.admit(upsert("a"), 10, 1);
    const released = subject.written(
      { ...snapshotWrite, sweep: { collection: other, present: new Set() } },
      result({ divergences: [] }),
    );
    assert.deepEqual(
      released.map((i) => [i.item.type === "upsert" && i.item.identity.name, i.admitted]),
      [["a", true]],
    );
  });

  it("drops live items while the render diverges, and counts them", () => {
    const { subject, seen } = folders();
    subject.admit({ target, item: { type: "replaying", collection } }, 0, 0);
    subject.written(
      snapshotWrite,
      result({
        divergences: [{ document: "ConfigMap apps/a", path: "data.x", rendered: "${X}", live: "1" }],
      }),
    );
    assert.equal(seen.reports.at(-1)?.renderGate.reason, "RenderDoesNotMatchLive");
    assert.equal(subject.admit(upsert("a"), 10, 1).pass, false);
    assert.deepEqual(seen.dropped, ["render_fidelity_diverged x1"]);
  });

  it("drops a write into a refused folder, and asks for a fresh snapshot once the folder is accepted again", () => {
    const { subject, seen } = folders();
    const problem = {
      path: "clusters/dev/kustomization.yaml",
      feature: "secretGenerator",
      message: "refused",
      summary: "refused",
    };
    const refusal = { problems: [problem], message: problem.message };
    subject.written(snapshotWrite, result({ refusal }));
    assert.equal(subject.isRefused(target), true);
    assert.deepEqual(seen.dropped, ["unsupported_content x1"]);
    assert.equal(seen.reports.at(-1)?.refusal, refusal);
    subject.checked(target, undefined);
    assert.equal(subject.isRefused(target), false);
    assert.deepEqual(seen.resyncs, [undefined], "every collection of the target replays");
  });

  it("gives up a hold past its deadline, counts what it dropped, and asks for that collection's snapshot", () => {
    const { subject, seen } = folders();
    subject.admit({ target, item: { type: "replaying", collection } }, 0, 0);
    subject.admit(upsert("a"), 10, 1);
    assert.equal(subject.dueAt(), 60_001);
    subject.expire(60_001);
    assert.deepEqual(seen.dropped, ["render_fidelity_pending x1"]);
    assert.deepEqual(seen.resyncs, [[collection.key]]);
  });

  it("reports the kustomize root as the placement rung of a folder with one kustomization", () => {
    const { subject, seen } = folders();
    subject.written(
      snapshotWrite,
      result({ placements: [{ identity: identityOf("a"), source: "KustomizeRoot" }] }),
    );
    assert.equal(seen.reports.at(-1)?.placement?.source, "KustomizeRoot");
  });
});
