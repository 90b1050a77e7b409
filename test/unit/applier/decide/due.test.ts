import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ApplyDue, refusalSpacingMs, type Applier } from "../../../../internal/applier/decide/due.ts";

const applier = (
  name: string,
  source = "plane/shop/state",
  published = true,
  uids = [`${name}-t`],
): Applier => ({
  claim: { kind: "FluxClaim", namespace: "shop", name },
  source,
  targets: uids.map((uid) => ({ uid, ref: { namespace: "shop", name: uid }, published })),
});

function worker() {
  let n = 0;
  return new ApplyDue(() => `token-${++n}`);
}

const reasons = (attempts: ReturnType<ApplyDue["due"]>) =>
  attempts.flatMap((a) => a.targets.map((t) => `${a.claim.name}:${t.reason}`));

describe("the worker's apply decisions", () => {
  const apps = applier("apps");

  it("the first observation is a baseline: a converge is pending, never a ForeignCommit", () => {
    const due = worker();
    due.observe([apps], false);
    assert.deepEqual(reasons(due.due([apps], "c1", 0)), ["apps:CatchUp"]);
  });

  it("a tip the worker pushed leaves nothing pending", () => {
    const due = worker();
    due.observe([apps], true);
    due.restore(apps, "c1");
    due.observe([apps], true);
    assert.deepEqual(due.due([apps], "c1", 0), []);
  });

  it("any other tip is a ForeignCommit for every applier on the branch", () => {
    const due = worker();
    const infra = applier("infra", "plane/shop/infra");
    due.observe([apps, infra], true);
    for (const a of [apps, infra]) due.restore(a, "c1");
    due.due([apps, infra], "c1", 0);
    due.observe([apps, infra], false);
    assert.deepEqual(reasons(due.due([apps, infra], "c2", 0)).sort(), [
      "apps:ForeignCommit",
      "infra:ForeignCommit",
    ]);
  });

  it("nothing is asked before every initial snapshot of the covered targets is published", () => {
    const due = worker();
    const unpublished = applier("apps", undefined, false);
    due.observe([unpublished], false);
    assert.deepEqual(due.due([unpublished], "c1", 0), []);
    assert.deepEqual(reasons(due.due([apps], "c1", 0)), ["apps:CatchUp"], "the reason stayed pending");
  });

  it("an empty tip asks nothing, and the reason stays pending", () => {
    const due = worker();
    due.observe([apps], false);
    assert.deepEqual(due.due([apps], undefined, 0), []);
    assert.equal(due.due([apps], "c1", 0).length, 1);
  });

  it("a converge of the commit last applied asks nothing", () => {
    const due = worker();
    due.restore(apps, "c1");
    due.observe([apps], false);
    assert.deepEqual(due.due([apps], "c1", 0), []);
    assert.equal(due.ahead(apps, "c1"), false);
  });

  it("an adopt is asked even at the commit last applied", () => {
    const due = worker();
    due.restore(apps, "c1");
    due.observe([apps], true);
    due.raise(apps, "apps-t", "CatchUp");
    assert.deepEqual(reasons(due.due([apps], "c1", 0)), ["apps:CatchUp"]);
  });

  it("a first naming converges once per GitTarget uid", () => {
    const due = worker();
    due.observe([], true);
    due.noticeNamed(apps);
    const [attempt] = due.due([apps], "c1", 0);
    due.report(apps.claim, attempt!.token, { kind: "succeeded", commit: "c1" }, 0);
    due.noticeNamed(apps);
    assert.deepEqual(due.due([apps], "c2", 0), [], "the same uid is not named again");
    const recreated = applier("apps", undefined, true, ["apps-t2"]);
    due.noticeNamed(recreated);
    assert.deepEqual(reasons(due.due([recreated], "c2", 0)), ["apps:CatchUp"]);
  });

  it("one reason per target in an attempt, by precedence: ForeignCommit, Repair, Refusal, CatchUp", () => {
    const due = worker();
    due.restore(apps, "c1");
    due.observe([apps], true);
    due.raise(apps, "apps-t", "CatchUp");
    due.raise(apps, "apps-t", "Refusal");
    due.raise(apps, "apps-t", "Repair");
    assert.deepEqual(reasons(due.due([apps], "c1", 0)), ["apps:Repair"]);
  });

  it("a Refusal asks at most once a minute per target; one inside that minute is carried by a trailing one", () => {
    const due = worker();
    due.observe([apps], true);
    due.raise(apps, "apps-t", "Refusal");
    const [first] = due.due([apps], "c1", 0);
    due.report(apps.claim, first!.token, { kind: "succeeded", commit: "c1" }, 1_000);
    due.raise(apps, "apps-t", "Refusal");
    assert.deepEqual(due.due([apps], "c1", 30_000), []);
    assert.deepEqual(reasons(due.due([apps], "c1", refusalSpacingMs)), ["apps:Refusal"]);
  });

  it("one attempt per applier is out at a time", () => {
    const due = worker();
    due.observe([apps], false);
    assert.equal(due.due([apps], "c1", 0).length, 1);
    due.raise(apps, "apps-t", "Repair");
    assert.deepEqual(due.due([apps], "c1", 0), []);
  });

  it("a stale attempt is decided again at once, with no backoff", () => {
    const due = worker();
    due.observe([apps], false);
    const [attempt] = due.due([apps], "c1", 0);
    due.report(apps.claim, attempt!.token, { kind: "stale" }, 0);
    assert.deepEqual(reasons(due.due([apps], "c2", 0)), ["apps:CatchUp"]);
  });

  it("a failure gives back what it carried and backs off 2 s doubling to 5 min, at least 15 s after a rejection", () => {
    const due = worker();
    due.observe([apps], false);
    let now = 0;
    const fail = (kind: "failed" | "rejected") => {
      const [attempt] = due.due([apps], "c1", now);
      assert.ok(attempt, `due at ${now}`);
      due.report(apps.claim, attempt.token, { kind }, now);
    };
    fail("failed");
    assert.deepEqual(due.due([apps], "c1", now + 1_999), []);
    now += 2_000;
    fail("failed");
    assert.deepEqual(due.due([apps], "c1", now + 3_999), []);
    now += 4_000;
    fail("rejected");
    assert.deepEqual(due.due([apps], "c1", now + 14_999), [], "15 s, not 8 s, after a rejection");
    now += 15_000;
    for (let i = 0; i < 12; i++) {
      fail("failed");
      now += 5 * 60_000;
    }
    assert.equal(due.due([apps], "c1", now).length, 1, "capped at 5 minutes");
  });

  it("a refusal that no longer stands is not given back", () => {
    const due = worker();
    due.restore(apps, "c1");
    due.observe([apps], true);
    due.raise(apps, "apps-t", "Refusal");
    const [attempt] = due.due([apps], "c1", 0);
    due.report(apps.claim, attempt!.token, { kind: "failed" }, 0, false);
    assert.deepEqual(due.due([apps], "c1", refusalSpacingMs * 2), []);
  });

  it("appliers sharing a source take turns, oldest turn first", () => {
    const due = worker();
    const [a, b] = [applier("a", "plane/shop/state"), applier("b", "plane/shop/state")];
    due.observe([a, b], false);
    const first = due.due([a, b], "c1", 10);
    assert.deepEqual(reasons(first), ["a:CatchUp"], "one operation per source");
    due.report(a.claim, first[0]!.token, { kind: "succeeded", commit: "c1" }, 11);
    due.observe([a, b], false);
    const second = due.due([a, b], "c2", 12);
    assert.deepEqual(reasons(second), ["b:ForeignCommit"], "b's turn is older than a's");
  });
});

describe("the worker flushes only for an apply that would be sent", () => {
  const apps = applier("apps");

  it("wants an apply exactly when due would send one, and sends nothing for asking", () => {
    const due = worker();
    assert.equal(due.wants([apps], "c1", 0), false, "nothing observed, nothing pending");
    due.observe([apps], false);
    assert.equal(due.wants([apps], undefined, 0), false, "an empty tip asks nothing");
    assert.equal(due.wants([apps], "c1", 0), true);
    assert.equal(due.wants([apps], "c1", 0), true, "asking twice sends nothing");
    assert.equal(due.due([apps], "c1", 0).length, 1);
    assert.equal(due.wants([apps], "c1", 0), false, "one attempt out at a time");
  });

  it("a failed attempt wakes the worker when its backoff ends, and a dropped one gives nothing back", () => {
    const due = worker();
    due.observe([apps], false);
    const [first] = due.due([apps], "c1", 0);
    due.report(apps.claim, first!.token, { kind: "failed" }, 1_000);
    assert.equal(due.wakeAt([apps], 1_000), 3_000, "2 s after the failure");
    assert.equal(due.wants([apps], "c1", 2_999), false);
    const [second] = due.due([apps], "c1", 3_000);
    due.report(apps.claim, second!.token, { kind: "dropped" }, 3_500);
    assert.equal(due.wants([apps], "c1", 10_000), false, "a dropped attempt's reasons are not given back");
    assert.equal(due.wakeAt([apps], 10_000), undefined);
  });
});

describe("an applier its claim does not hold yet", () => {
  it("keeps its reasons pending, is looked at again in a second, and is asked once it is held", () => {
    const due = worker();
    const adopting = { ...applier("apps"), holds: false };
    due.observe([adopting], false);
    assert.equal(due.wants([adopting], "c1", 0), false);
    assert.equal(due.wakeAt([adopting], 0), 1_000);
    const held = { ...adopting, holds: true };
    assert.deepEqual(reasons(due.due([held], "c1", 1_000)), ["apps:CatchUp"]);
  });
});

describe("Git is ahead of the cluster (applier-claims.md, Resyncs while Git is ahead)", () => {
  const apps = applier("apps");

  it("while a ForeignCommit is pending or an attempt is out, and not once it succeeded", () => {
    const due = worker();
    due.restore(apps, "c0");
    due.observe([apps], true);
    assert.equal(due.ahead(apps, "c0"), false, "nothing pending");
    due.observe([apps], false);
    assert.equal(due.ahead(apps, "c1"), true, "a ForeignCommit pending");
    const [attempt] = due.due([apps], "c1", 0);
    assert.equal(due.ahead(apps, "c1"), true, "its attempt out");
    due.report(apps.claim, attempt!.token, { kind: "failed" }, 0);
    assert.equal(due.ahead(apps, "c1"), true, "given back after a failure");
    const [retry] = due.due([apps], "c1", 60_000);
    due.report(apps.claim, retry!.token, { kind: "succeeded", commit: "c1" }, 60_000);
    assert.equal(due.ahead(apps, "c1"), false, "applied");
  });

  it("an adopt does not count, and a converge counts only past the initial-snapshot barrier", () => {
    const due = worker();
    due.restore(apps, "c1");
    due.observe([apps], true);
    due.raise(apps, "apps-t", "CatchUp");
    assert.equal(due.ahead(apps, "c1"), false, "an adopt applies what the cluster runs");
    const fresh = worker();
    const unpublished = applier("apps", undefined, false);
    fresh.observe([unpublished], false);
    assert.equal(fresh.ahead(unpublished, "c1"), false, "before the barrier");
    assert.equal(fresh.ahead(apps, "c1"), true, "past it");
    fresh.restore(apps, "c1");
    assert.equal(fresh.ahead(apps, "c1"), false, "a converge of the commit last applied");
  });
});
