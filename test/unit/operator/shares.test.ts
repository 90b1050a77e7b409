import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  decideShares,
  fairShare,
  type ShardView,
  type ShareFacts,
} from "../../../internal/operator/shares.ts";

const shards = (n: number) =>
  Array.from({ length: n }, (_, i) => `repo#branch-${String(i).padStart(2, "0")}`);

function facts(overrides: Partial<ShareFacts> & Pick<ShareFacts, "self">): ShareFacts {
  return { live: [overrides.self], wanted: [], leases: new Map(), held: new Set(), ...overrides };
}

/** The Leases of a world where each replica holds the shards listed for it. */
function holding(byReplica: Record<string, string[]>): Map<string, ShardView> {
  const leases = new Map<string, ShardView>();
  for (const [holder, held] of Object.entries(byReplica))
    for (const shard of held) leases.set(shard, { holder, expired: false });
  return leases;
}

/** Runs rounds of every replica in turn, each seeing the others' Leases, until nothing moves. */
function settle(replicas: string[], wanted: string[], start: Record<string, string[]> = {}) {
  const held: Record<string, string[]> = Object.fromEntries(replicas.map((r) => [r, start[r] ?? []]));
  for (let round = 0; round < 20; round++) {
    let moved = false;
    for (const self of replicas) {
      const decision = decideShares({
        self,
        live: replicas,
        wanted,
        leases: holding(held),
        held: new Set(held[self]),
      });
      if (decision.take.length + decision.giveBack.length > 0) moved = true;
      held[self] = [...held[self]!.filter((s) => !decision.giveBack.includes(s)), ...decision.take];
    }
    if (!moved) return held;
  }
  assert.fail("the shares never settled");
}

describe("sharing shards among live replicas", () => {
  it("rule 1: a replica's fair share is ceil(shards / live replicas)", () => {
    assert.equal(fairShare(30, 3), 10);
    assert.equal(fairShare(31, 3), 11);
    assert.equal(fairShare(2, 3), 1);
    assert.equal(fairShare(5, 0), 5);
  });

  it("rule 2: under its share a replica takes free, released and expired shards, up to its share", () => {
    const wanted = shards(6);
    const leases = new Map<string, ShardView>([
      [wanted[0]!, { holder: "b", expired: false }],
      [wanted[1]!, { holder: "", expired: false }],
      [wanted[2]!, { holder: "c", expired: true }],
    ]);
    const decision = decideShares(facts({ self: "a", live: ["a", "b", "c"], wanted, leases }));
    assert.equal(decision.take.length, 2, "its share of six among three");
    assert.ok(!decision.take.includes(wanted[0]!), "never a shard another live replica holds");
    assert.deepEqual(decision.giveBack, []);
  });

  it("thirty shards among three replicas settle at ten each, from nothing", () => {
    const held = settle(["a", "b", "c"], shards(30));
    assert.deepEqual(
      Object.values(held).map((h) => h.length),
      [10, 10, 10],
    );
    assert.equal(new Set(Object.values(held).flat()).size, 30, "every shard held once");
  });

  it("rule 3: a replica that held everything gives back what a newcomer can take, and no more", () => {
    const wanted = shards(30);
    const decision = decideShares(
      facts({ self: "a", live: ["a", "b"], wanted, leases: holding({ a: wanted }), held: new Set(wanted) }),
    );
    assert.equal(decision.giveBack.length, 15);
    assert.deepEqual(decision.take, []);
    const held = settle(["a", "b", "c"], wanted, { a: wanted });
    for (const h of Object.values(held)) assert.ok(h.length >= 9 && h.length <= 11, `${h.length} of 30`);
  });

  it("rule 3: over its share but with nobody under it, a replica gives nothing back", () => {
    const wanted = shards(31);
    const leases = holding({ a: wanted.slice(0, 11), b: wanted.slice(11, 21), c: wanted.slice(21) });
    const decision = decideShares(
      facts({ self: "a", live: ["a", "b", "c"], wanted, leases, held: new Set(wanted.slice(0, 11)) }),
    );
    assert.deepEqual(decision, { take: [], giveBack: [] });
  });

  it("rule 3: over the floor while another is under it, a replica gives back: 7 over 3 settle 3/2/2, never 3/3/1", () => {
    const wanted = shards(7);
    const held = settle(["a", "b", "c"], wanted, {
      a: wanted.slice(0, 3),
      b: wanted.slice(3, 6),
      c: wanted.slice(6),
    });
    assert.deepEqual(
      Object.values(held)
        .map((h) => h.length)
        .sort(),
      [2, 2, 3],
    );
    assert.equal(new Set(Object.values(held).flat()).size, 7, "every shard held once");
  });

  it("rule 3: a replica under its share takes free shards before anyone gives one back for it", () => {
    const wanted = shards(10);
    // a holds 6, b holds none, 4 are free: b takes the free ones; a gives back only one more.
    const leases = holding({ a: wanted.slice(0, 6) });
    const decision = decideShares(
      facts({ self: "a", live: ["a", "b"], wanted, leases, held: new Set(wanted.slice(0, 6)) }),
    );
    assert.equal(decision.giveBack.length, 1);
  });

  it("a dead replica's shards, once expired, are taken by the survivors within their shares", () => {
    const wanted = shards(30);
    const start = { a: wanted.slice(0, 10), b: wanted.slice(10, 20) };
    const held = settle(["a", "b"], wanted, start);
    assert.deepEqual(
      Object.values(held).map((h) => h.length),
      [15, 15],
    );
  });

  it("rule 4: a shard no longer wanted is given back at once", () => {
    const wanted = shards(2);
    const decision = decideShares(
      facts({
        self: "a",
        wanted,
        leases: holding({ a: [...wanted, "gone#main"] }),
        held: new Set([...wanted, "gone#main"]),
      }),
    );
    assert.deepEqual(decision.giveBack, ["gone#main"]);
  });

  it("rule 5: a shard taken within the last lease duration is not given back for balance, a shard nobody wants still is", () => {
    const wanted = shards(30);
    const held = new Set([...wanted, "gone#main"]);
    const decision = decideShares(
      facts({ self: "a", live: ["a", "b"], wanted, leases: holding({ a: [...held] }), held, settling: held }),
    );
    assert.deepEqual(decision, { take: [], giveBack: ["gone#main"] });
    const settled = decideShares(
      facts({
        self: "a",
        live: ["a", "b"],
        wanted,
        leases: holding({ a: wanted }),
        held: new Set(wanted),
        settling: new Set(wanted.slice(0, 20)),
      }),
    );
    assert.equal(settled.giveBack.length, 10, "only the ten settled ones may go, though fifteen should");
    assert.ok(settled.giveBack.every((s) => !wanted.slice(0, 20).includes(s)));
  });

  it("rule 6: a shard given back for balance is not taken back by its giver within a lease duration, so the replica under its share gets it", () => {
    // Four branches over three replicas: a and b hold two each, c none. a gives one back for c.
    const [s0, s1, s2, s3] = shards(4) as [string, string, string, string];
    const live = ["a", "b", "c"];
    const gave = decideShares(
      facts({
        self: "a",
        live,
        wanted: [s0, s1, s2, s3],
        leases: holding({ a: [s0, s1], b: [s2, s3] }),
        held: new Set([s0, s1]),
      }),
    );
    assert.equal(gave.giveBack.length, 1);
    const given = gave.giveBack[0]!;
    const kept = given === s0 ? s1 : s0;
    // a's next round, before c's: a is under its share of two, and the shard it gave is free.
    const next = (cooling?: Set<string>) =>
      decideShares(
        facts({
          self: "a",
          live,
          wanted: [s0, s1, s2, s3],
          leases: holding({ a: [kept], b: [s2, s3] }),
          held: new Set([kept]),
          ...(cooling ? { cooling } : {}),
        }),
      );
    assert.deepEqual(next().take, [given], "without the rule, the giver takes it straight back");
    assert.deepEqual(next(new Set([given])), { take: [], giveBack: [] });
    const taker = decideShares(
      facts({ self: "c", live, wanted: [s0, s1, s2, s3], leases: holding({ a: [kept], b: [s2, s3] }) }),
    );
    assert.deepEqual(taker.take, [given], "c takes it on its round");
  });

  it("rule 7: two replicas that each gave a shard back for a newcomer under the floor leave both to it, instead of taking each other's", () => {
    // Thirty-one branches, three replicas: a and b held eleven each, the newcomer c nine; a and b
    // each gave one back, so both are at ten, the floor, and under their share of eleven.
    const wanted = shards(31);
    const [fromA, fromB] = [wanted[0]!, wanted[1]!];
    const a = wanted.slice(2, 12);
    const b = wanted.slice(12, 22);
    const c = wanted.slice(22, 31);
    const leases = holding({ a, b, c });
    const released = (view?: boolean) => {
      for (const shard of [fromA, fromB]) leases.set(shard, { holder: "", expired: false, released: view });
    };
    const round = (self: string, held: string[], cooling: string[]) =>
      decideShares(
        facts({
          self,
          live: ["a", "b", "c"],
          wanted,
          leases,
          held: new Set(held),
          cooling: new Set(cooling),
        }),
      );
    released(undefined);
    assert.deepEqual(round("a", a, [fromA]).take, [fromB], "without the rule, a takes what b gave back");
    released(true);
    assert.deepEqual(round("a", a, [fromA]), { take: [], giveBack: [] });
    assert.deepEqual(round("b", b, [fromB]), { take: [], giveBack: [] });
    assert.deepEqual(round("c", c, []).take.sort(), [fromA, fromB].sort(), "c takes both");
  });

  it("replicas prefer different shards, so a round of simultaneous takes rarely collides", () => {
    const wanted = shards(30);
    const first = (self: string) => decideShares(facts({ self, live: ["a", "b", "c"], wanted })).take;
    const overlap = first("a").filter((s) => first("b").includes(s));
    assert.ok(overlap.length < 10, `a and b both chose ${overlap.length} of their 10 first`);
  });
});
