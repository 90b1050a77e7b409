import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  readyTrio,
  setCondition,
  stalledTrio,
  type Condition,
} from "../../../internal/operator/conditions.ts";
import { parseStoreKey, storeKey } from "../../../internal/types/names.ts";
import { eventName } from "../../../internal/operator/events.ts";
import { addFinalizerPatch, removeFinalizerPatch } from "../../../internal/operator/finalizers.ts";
import { decideLease, observe } from "../../../internal/operator/leaderelection.ts";
import {
  factsOf,
  generationChanged,
  labelsChanged,
  readyTransition,
} from "../../../internal/operator/predicates.ts";
import { desiredStatus, ownedConditionTypes, statusHolds } from "../../../internal/operator/status.ts";

const t0 = new Date("2026-11-29T10:00:00Z");
const t1 = new Date("2026-11-29T10:05:00Z");
const ready = (status: Condition["status"], reason = "Succeeded") => ({
  type: "Ready",
  status,
  reason,
  message: "m",
});

describe("setCondition", () => {
  it("keeps lastTransitionTime while the status holds, even when reason and message change", () => {
    const first = setCondition([], ready("True"), t0);
    const second = setCondition(first, { ...ready("True", "StillFine"), message: "other" }, t1);
    assert.equal(second[0]?.lastTransitionTime, t0.toISOString());
    assert.equal(second[0]?.reason, "StillFine");
  });

  it("moves lastTransitionTime when the status flips, and keeps other conditions in place", () => {
    const first = setCondition(
      setCondition([], ready("True"), t0),
      { type: "Stalled", status: "False", reason: "R", message: "" },
      t0,
    );
    const flipped = setCondition(first, ready("False", "Broken"), t1);
    assert.deepEqual(
      flipped.map((c) => c.type),
      ["Ready", "Stalled"],
    );
    assert.equal(flipped[0]?.lastTransitionTime, t1.toISOString());
  });

  it("kstatus trios are exclusive: Ready, or Reconciling, or Stalled", () => {
    assert.deepEqual(
      readyTrio("Succeeded", "ok", 3).map((c) => c.status),
      ["True", "False", "False"],
    );
    assert.deepEqual(
      stalledTrio("Bad", "fix it", 3).map((c) => c.status),
      ["False", "False", "True"],
    );
  });
});

describe("the status writer's decision", () => {
  const object = {
    metadata: { name: "t", generation: 2 },
    status: {
      observedGeneration: 2,
      conditions: [{ ...ready("True"), lastTransitionTime: t0.toISOString(), observedGeneration: 2 }],
    },
  };

  it("holds when nothing it would write differs, so it writes nothing", () => {
    const desired = desiredStatus(object, { conditions: [{ ...ready("True"), observedGeneration: 2 }] }, t1);
    assert.equal(statusHolds(object, desired), true);
  });

  it("writes when a condition, a field or the generation differs", () => {
    assert.equal(
      statusHolds(
        object,
        desiredStatus(object, { conditions: [{ ...ready("False"), observedGeneration: 2 }] }, t1),
      ),
      false,
    );
    assert.equal(
      statusHolds(object, desiredStatus(object, { conditions: [], fields: { gitTargetCount: 1 } }, t1)),
      false,
    );
    const newer = { ...object, metadata: { name: "t", generation: 3 } };
    assert.equal(statusHolds(newer, desiredStatus(newer, { conditions: [] }, t1)), false);
  });

  it("applies only the conditions it sets, leaving others to their owners", () => {
    const desired = desiredStatus(
      object,
      { conditions: [{ type: "Validated", status: "True", reason: "Succeeded", message: "" }] },
      t1,
    );
    assert.deepEqual(
      (desired.conditions as Condition[]).map((c) => c.type),
      ["Validated"],
    );
  });
});

describe("predicates", () => {
  const base = {
    metadata: { generation: 1, labels: { a: "1" } },
    status: { conditions: [{ ...ready("False"), lastTransitionTime: "" }] },
  };
  const facts = factsOf(base);

  it("generationChanged sees spec changes and deletion, not status churn", () => {
    assert.equal(generationChanged(facts, factsOf({ ...base, status: { conditions: [] } })), false);
    assert.equal(
      generationChanged(facts, factsOf({ ...base, metadata: { ...base.metadata, generation: 2 } })),
      true,
    );
    assert.equal(
      generationChanged(facts, factsOf({ ...base, metadata: { ...base.metadata, deletionTimestamp: t0 } })),
      true,
    );
  });

  it("labelsChanged sees an added, changed or removed label", () => {
    assert.equal(labelsChanged(facts, factsOf({ metadata: { labels: { a: "1" } } })), false);
    assert.equal(labelsChanged(facts, factsOf({ metadata: { labels: { a: "2" } } })), true);
    assert.equal(labelsChanged(facts, factsOf({ metadata: {} })), true);
  });

  it("readyTransition sees only a change of Ready's status", () => {
    assert.equal(
      readyTransition(
        facts,
        factsOf({ status: { conditions: [{ ...ready("False", "Other"), lastTransitionTime: "" }] } }),
      ),
      false,
    );
    assert.equal(
      readyTransition(
        facts,
        factsOf({ status: { conditions: [{ ...ready("True"), lastTransitionTime: "" }] } }),
      ),
      true,
    );
  });
});

describe("decideLease", () => {
  const lease = (holderIdentity: string) => ({ spec: { holderIdentity, renewTime: "r1" } });

  it("creates a missing lease, renews its own, and takes a released one", () => {
    assert.deepEqual(decideLease(undefined, undefined, "me", 15_000, 0), { action: "create" });
    assert.deepEqual(decideLease(lease("me"), undefined, "me", 15_000, 0), { action: "renew" });
    assert.deepEqual(decideLease(lease(""), undefined, "me", 15_000, 0), { action: "acquire" });
  });

  it("waits for another holder until its lease expires by this candidate's own clock", () => {
    const seen = observe(undefined, lease("other"), 1_000);
    assert.deepEqual(decideLease(lease("other"), seen, "me", 15_000, 15_999), {
      action: "wait",
      holder: "other",
    });
    assert.deepEqual(decideLease(lease("other"), seen, "me", 15_000, 16_000), { action: "acquire" });
  });

  it("restarts the expiry clock whenever the holder renews", () => {
    const seen = observe(undefined, lease("other"), 1_000);
    assert.equal(
      observe(seen, lease("other"), 9_000),
      seen,
      "an unchanged record keeps its observation time",
    );
    const renewed = observe(seen, { spec: { holderIdentity: "other", renewTime: "r2" } }, 9_000);
    assert.equal(renewed?.observedAt, 9_000);
  });
});

describe("finalizer patches", () => {
  it("add guards on what it read, creating the list when there is none", () => {
    assert.deepEqual(addFinalizerPatch({ metadata: { resourceVersion: "7" } }, "f"), [
      { op: "test", path: "/metadata/resourceVersion", value: "7" },
      { op: "add", path: "/metadata/finalizers", value: ["f"] },
    ]);
    assert.deepEqual(addFinalizerPatch({ metadata: { finalizers: ["x"] } }, "f"), [
      { op: "test", path: "/metadata/finalizers", value: ["x"] },
      { op: "add", path: "/metadata/finalizers/-", value: "f" },
    ]);
  });

  it("remove tests the index it removes, and is empty when there is nothing to remove", () => {
    assert.deepEqual(removeFinalizerPatch({ metadata: { finalizers: ["x", "f"] } }, "f"), [
      { op: "test", path: "/metadata/finalizers/1", value: "f" },
      { op: "remove", path: "/metadata/finalizers/1" },
    ]);
    assert.deepEqual(removeFinalizerPatch({ metadata: {} }, "f"), []);
  });
});

describe("names and keys", () => {
  it("request keys round-trip, with and without a namespace", () => {
    assert.deepEqual(parseStoreKey(storeKey({ namespace: "ns", name: "a" })), {
      namespace: "ns",
      name: "a",
    });
    assert.deepEqual(parseStoreKey(storeKey({ name: "cluster-thing" })), { name: "cluster-thing" });
  });

  it("event names are valid object names, however long the object's", () => {
    assert.match(eventName("team-a"), /^team-a\.[0-9a-f]+$/);
    assert.ok(eventName("x".repeat(253)).length <= 253);
  });
});

describe("condition ownership", () => {
  const managed = (manager: string, types: string[]) => ({
    manager,
    operation: "Apply",
    subresource: "status",
    fieldsV1: {
      "f:status": { "f:conditions": Object.fromEntries(types.map((t) => [`k:{"type":"${t}"}`, {}])) },
    },
  });
  const object = {
    metadata: {
      name: "t",
      generation: 1,
      managedFields: [managed("gitops-reverser", ["Ready", "Stale"]), managed("someone-else", ["Theirs"])],
    },
    status: {
      observedGeneration: 1,
      conditions: ["Ready", "Stale", "Theirs"].map((type) => ({
        type,
        status: "True" as const,
        reason: "R",
        message: "",
        lastTransitionTime: t0.toISOString(),
        observedGeneration: 1,
      })),
    },
  };

  it("reads the condition types a field manager owns from managedFields", () => {
    assert.deepEqual([...ownedConditionTypes(object, "gitops-reverser")].sort(), ["Ready", "Stale"]);
  });

  it("does not hold when this writer would drop a condition it set before, but ignores other writers' conditions", () => {
    const onlyReady = desiredStatus(
      object,
      { conditions: [{ type: "Ready", status: "True", reason: "R", message: "", observedGeneration: 1 }] },
      t1,
    );
    assert.equal(statusHolds(object, onlyReady, "gitops-reverser"), false, "Stale would be removed");
    const both = desiredStatus(
      object,
      {
        conditions: ["Ready", "Stale"].map((type) => ({
          type,
          status: "True" as const,
          reason: "R",
          message: "",
          observedGeneration: 1,
        })),
      },
      t1,
    );
    assert.equal(statusHolds(object, both, "gitops-reverser"), true, "Theirs belongs to someone else");
  });
});
