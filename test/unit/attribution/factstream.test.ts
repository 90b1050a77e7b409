import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Fact } from "../../../internal/attribution/fact.ts";
import { MemoryFactStream } from "../../../internal/attribution/factstream.ts";

const stream = { route: "team-a.self", type: "/configmaps" };
const fact = (auditID: string): Fact => ({
  auditID,
  actor: { username: "alice" },
  verb: "update",
  route: stream.route,
  group: "",
  resource: "configmaps",
  namespace: "apps",
  name: "web",
  uid: "u1",
  resourceVersion: auditID,
  at: 0,
});

describe("the in-process fact stream (--author-attribution-transport=memory)", () => {
  it("a follower that starts late replays one retention window, then hears every later append in order", async () => {
    let now = 1_000_000;
    const ring = new MemoryFactStream({ ms: 60_000, entries: 100 }, () => now);
    await ring.append(stream, [fact("1")]);
    now += 30_000;
    await ring.append(stream, [fact("2"), fact("3")]);
    now += 40_000; // "1" is now older than the window
    const heard: string[] = [];
    const stop = ring.follow(stream, (facts) => heard.push(facts.map((f) => f.auditID).join("+")));
    assert.deepEqual(heard, ["2+3"]);
    await ring.append(stream, [fact("4")]);
    await ring.append({ ...stream, type: "apps/deployments" }, [fact("other")]);
    assert.deepEqual(
      heard,
      ["2+3", "4"],
      "one append is one delivery; another type's stream is another stream",
    );
    stop();
    await ring.append(stream, [fact("5")]);
    assert.deepEqual(heard, ["2+3", "4"], "nothing after the follow ends");
  });

  it("keeps at most the retention's entries per stream, oldest dropped first", async () => {
    const ring = new MemoryFactStream({ ms: 60_000, entries: 2 });
    for (const id of ["1", "2", "3"]) await ring.append(stream, [fact(id)]);
    const heard: string[] = [];
    ring.follow(stream, (facts) => heard.push(facts[0]!.auditID));
    assert.deepEqual(heard, ["2", "3"]);
  });
});
