import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { RenderGate } from "../../../../internal/git/folder/rendergate.ts";

const limits = { holdMs: 600_000, budgetBytes: 1_000 };
const divergence = {
  document: "apps/Deployment/team-a/api",
  path: "spec.template.spec.containers[0].image",
  rendered: "registry/${CLUSTER}/api:1.0",
  live: "registry/prod-eu/api:1.0",
};

/** A gate whose collections have all started replaying, as at operator start. */
function started(...collections: string[]): RenderGate<string> {
  const gate = new RenderGate<string>(limits);
  for (const c of collections) gate.replayStarted(c);
  return gate;
}

describe("the render-vs-live gate", () => {
  it("is True with nothing to measure when the target has no collections", () => {
    const gate = new RenderGate<string>(limits);
    assert.deepEqual(gate.report(), { status: "True", reason: "Succeeded", message: "Nothing to measure" });
    assert.equal(gate.admit("deployments", "e1", 10, 0), "pass");
  });

  it("is Unknown while any collection replays, as every one does at start, and holds live events", () => {
    const gate = started("deployments", "configmaps");
    assert.deepEqual(gate.report(), {
      status: "Unknown",
      reason: "Rechecking",
      message: "2 of 2 collections still replaying; live writes are held",
    });
    assert.equal(gate.admit("deployments", "e1", 10, 0), "held");
    assert.equal(gate.admit("configmaps", "e2", 20, 1), "held");
    assert.equal(gate.heldBytes, 30);
    assert.equal(gate.dueAt(), 600_000);
  });

  it("stays closed for every collection while one still replays", () => {
    const gate = started("deployments", "configmaps");
    assert.deepEqual(gate.replayMeasured("deployments", []), { released: [], dropped: [] });
    assert.equal(gate.report().message, "1 of 2 collections still replaying; live writes are held");
    assert.equal(gate.admit("deployments", "e1", 10, 0), "held");
  });

  it("releases the held events in arrival order once every collection measured clean, then passes", () => {
    const gate = started("deployments", "configmaps", "services");
    gate.replayMeasured("deployments", []);
    gate.replayMeasured("configmaps", []);
    for (const [i, c] of ["configmaps", "deployments", "configmaps", "deployments"].entries())
      assert.equal(gate.admit(c, `e${i}`, 10, i), "held");
    assert.deepEqual(gate.replayMeasured("services", []), {
      released: ["e0", "e1", "e2", "e3"],
      dropped: [],
    });
    assert.deepEqual(gate.report(), {
      status: "True",
      reason: "Succeeded",
      message: "Every rendered value of 3 collections matches live",
    });
    assert.equal(gate.heldBytes, 0);
    assert.equal(gate.dueAt(), undefined);
    assert.equal(gate.admit("configmaps", "e4", 10, 4), "pass");
  });

  it("lets a collection's snapshot supersede that collection's events held before it arrived, uncounted", () => {
    const gate = started("deployments", "configmaps");
    gate.admit("deployments", "d1", 10, 0);
    gate.admit("configmaps", "c1", 10, 1);
    gate.admit("deployments", "d2", 10, 2);
    gate.snapshotArrived("deployments");
    assert.equal(gate.heldBytes, 10);
    // An event after the snapshot is newer than it: the measurement keeps it.
    gate.admit("deployments", "d3", 10, 3);
    assert.deepEqual(gate.replayMeasured("deployments", []), { released: [], dropped: [] });
    assert.deepEqual(gate.replayMeasured("configmaps", []), { released: ["c1", "d3"], dropped: [] });
  });

  it("goes False on a divergence, drops the held events as diverged and drops every later live event", () => {
    const gate = started("deployments", "configmaps");
    gate.admit("configmaps", "c1", 10, 0);
    gate.admit("configmaps", "c2", 10, 1);
    assert.deepEqual(gate.replayMeasured("deployments", [divergence]), {
      released: [],
      dropped: ["c1", "c2"],
    });
    assert.deepEqual(gate.report(), {
      status: "False",
      reason: "RenderDoesNotMatchLive",
      message:
        'apps/Deployment/team-a/api spec.template.spec.containers[0].image: the folder renders "registry/${CLUSTER}/api:1.0" but live holds "registry/prod-eu/api:1.0"',
    });
    assert.equal(gate.admit("configmaps", "c3", 10, 2), "render_fidelity_diverged");
    assert.equal(gate.heldBytes, 0);
    assert.equal(gate.dueAt(), undefined);
  });

  it("stays False while another collection is still replaying, a divergence outranking Unknown", () => {
    const gate = started("deployments", "configmaps");
    gate.replayMeasured("deployments", [divergence]);
    assert.equal(gate.report().status, "False");
  });

  it("names the first divergence by collection, truncates long values and counts the rest", () => {
    const gate = started("a-collection", "b-collection");
    const long = "x".repeat(200);
    gate.replayMeasured("b-collection", [{ ...divergence, document: "b" }]);
    gate.replayMeasured("a-collection", [
      { document: "a", path: "data.v", rendered: "${V}", live: long },
      divergence,
    ]);
    assert.equal(
      gate.report().message,
      `a data.v: the folder renders "\${V}" but live holds "${"x".repeat(80)}…" (and 2 more)`,
    );
  });

  it("does not reopen on a repair alone, only on a replay that measures the collection clean", () => {
    const gate = started("deployments");
    gate.replayMeasured("deployments", [divergence]);
    assert.equal(gate.admit("deployments", "e0", 10, 0), "render_fidelity_diverged");
    assert.equal(gate.report().status, "False");
    gate.replayStarted("deployments");
    assert.equal(gate.report().status, "Unknown");
    assert.equal(gate.admit("deployments", "e1", 10, 0), "held");
    gate.snapshotArrived("deployments");
    assert.deepEqual(gate.replayMeasured("deployments", []), { released: [], dropped: [] });
    assert.equal(gate.report().status, "True");
    gate.replayStarted("configmaps");
    gate.admit("configmaps", "e2", 10, 1);
    gate.replayMeasured("configmaps", [divergence]);
    gate.replayMeasured("configmaps", []);
    assert.equal(gate.report().status, "True", "a clean re-measure reopens the gate");
  });

  it("no longer counts a removed collection, releasing what it was blocking", () => {
    const gate = started("deployments", "configmaps");
    gate.replayMeasured("deployments", []);
    gate.admit("deployments", "e1", 10, 0);
    assert.deepEqual(gate.collectionRemoved("configmaps"), ["e1"]);
    assert.equal(gate.report().status, "True");
    const diverged = started("deployments", "configmaps");
    diverged.replayMeasured("deployments", []);
    diverged.replayMeasured("configmaps", [divergence]);
    assert.deepEqual(diverged.collectionRemoved("configmaps"), []);
    assert.equal(diverged.report().status, "True");
  });

  it("gives the hold up holdMs after its oldest event, dropping it as pending and naming the collections to resync", () => {
    const gate = started("deployments", "configmaps", "services");
    gate.admit("configmaps", "c1", 10, 1_000);
    gate.admit("deployments", "d1", 10, 2_000);
    gate.admit("configmaps", "c2", 10, 3_000);
    assert.equal(gate.dueAt(), 601_000);
    assert.deepEqual(gate.expire(600_999), { dropped: [], resync: [] });
    assert.deepEqual(gate.expire(601_000), {
      dropped: ["c1", "d1", "c2"],
      resync: ["configmaps", "deployments"],
    });
    assert.equal(gate.heldBytes, 0);
    assert.equal(gate.dueAt(), undefined);
    assert.deepEqual(
      gate.expire(700_000),
      { dropped: [], resync: [] },
      "each dropped event is returned once",
    );
    assert.equal(gate.report().status, "Unknown");
  });

  it("measures holdMs from the oldest event still held after a snapshot superseded older ones", () => {
    const gate = started("deployments", "configmaps");
    gate.admit("deployments", "d1", 10, 0);
    gate.admit("configmaps", "c1", 10, 5_000);
    gate.snapshotArrived("deployments");
    assert.equal(gate.dueAt(), 605_000);
  });

  it("gives the whole hold up when an event would pass the byte budget, that event dropped as pending", () => {
    const gate = started("deployments", "configmaps", "services");
    assert.equal(gate.admit("configmaps", "c1", 600, 0), "held");
    assert.equal(gate.admit("deployments", "d1", 400, 1), "held");
    assert.equal(gate.admit("services", "s1", 1, 2), "render_fidelity_pending");
    assert.equal(gate.heldBytes, 0);
    assert.equal(gate.dueAt(), 2, "due at once");
    assert.equal(gate.admit("deployments", "d2", 10, 3), "held", "a new hold starts");
    assert.deepEqual(gate.expire(2), {
      dropped: ["c1", "d1"],
      resync: ["configmaps", "deployments", "services"],
    });
    assert.equal(gate.dueAt(), 600_003);
    assert.deepEqual(gate.replayMeasured("services", [divergence]), { released: [], dropped: ["d2"] });
  });
});
