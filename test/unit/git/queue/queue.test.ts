// The durable write queue's rules, over a log in memory: what is kept, how entries read back,
// and where the log may be trimmed to.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Backlog } from "../../../../internal/git/queue/backlog.ts";
import { DurableWrites, trimPoint, type QueueState } from "../../../../internal/git/queue/durable.ts";
import {
  decodeEntry,
  durableItem,
  encodeEntry,
  replayedValues,
  type LiveItem,
  type QueueEntry,
} from "../../../../internal/git/queue/entries.ts";
import { compareIds, idAfter, newestId, oldestId } from "../../../../internal/git/queue/entryids.ts";
import { absentDocument } from "../../../../internal/git/folder/writes.ts";
import { contentDigest } from "../../../../internal/sanitize/digest.ts";
import { LogFenced, type LogEntry, type WriteLog } from "../../../../internal/git/queue/writelog.ts";
import type { Collection } from "../../../../internal/stream/collection.ts";
import type { StreamItem } from "../../../../internal/stream/stream.ts";
import { configMaps } from "../fixtures.ts";
import { configMapIdentity } from "../../../support/streams.ts";
import { quiet, recordingLogger } from "../../../support/logger.ts";

const alice = { name: "Alice", email: "alice@example.com", kind: "user" as const, username: "alice" };

type Upsert = Extract<LiveItem, { type: "upsert" }>;
const upsert = (name: string, value = "v"): Upsert => {
  const object = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace: "apps" },
    data: { value },
  };
  return { type: "upsert", collection: configMaps, identity: configMapIdentity(name), object };
};
const remove = (name: string): LiveItem => ({
  type: "delete",
  collection: configMaps,
  identity: configMapIdentity(name),
});

const secrets: Collection = { ...configMaps, key: "/secrets@apps", resource: "secrets", kind: "Secret" };
const secretIdentity = (name: string) => ({
  ...configMapIdentity(name),
  resource: "secrets",
  kind: "Secret",
});
const sealedSecrets: Collection = {
  ...configMaps,
  key: "bitnami.com/sealedsecrets@apps",
  group: "bitnami.com",
  version: "v1alpha1",
  resource: "sealedsecrets",
  kind: "SealedSecret",
};
const sealedIdentity = (name: string) => ({
  ...configMapIdentity(name),
  group: "bitnami.com",
  version: "v1alpha1",
  resource: "sealedsecrets",
  kind: "SealedSecret",
});

const secretUpsert: StreamItem = {
  type: "upsert",
  collection: secrets,
  identity: secretIdentity("db"),
  object: { apiVersion: "v1", kind: "Secret", metadata: { name: "db", namespace: "apps" } },
};
const marker: StreamItem = { type: "replaying", collection: configMaps };
const snapshot: StreamItem = { type: "snapshot", collection: configMaps, objects: [] };

/** A WriteLog in memory, with ids `${n}-0`; `away` makes every call reject as Redis away would. */
class MemoryLog implements WriteLog {
  readonly where = "memory";
  entries: [string, string | undefined][] = [];
  away = false;
  /** While set, an append lands (gets its id) only once this resolves. */
  landing: Promise<void> | undefined;
  private next = 1;

  /** While set, another process holds the log: every call is refused as fenced. */
  fenced = false;

  async append(value: string): Promise<string> {
    if (this.fenced) throw new LogFenced("memory is held by another process now");
    if (this.away) throw new Error("connect ECONNREFUSED");
    await this.landing;
    const id = `${this.next++}-0`;
    this.entries.push([id, value]);
    return id;
  }

  read(): Promise<LogEntry[]> {
    if (this.away) return Promise.reject(new Error("connect ECONNREFUSED"));
    return Promise.resolve([...this.entries]);
  }

  trim(minId: string): Promise<void> {
    if (this.fenced) return Promise.reject(new LogFenced("memory is held by another process now"));
    if (this.away) return Promise.reject(new Error("connect ECONNREFUSED"));
    this.entries = this.entries.filter(([id]) => compareIds(id, minId) >= 0);
    return Promise.resolve();
  }

  /** An entry written by an earlier process, as a takeover finds it. */
  put(value: string | undefined): string {
    const id = `${this.next++}-0`;
    this.entries.push([id, value]);
    return id;
  }

  ids(): string[] {
    return this.entries.map(([id]) => id);
  }
}

function durable(log: WriteLog, options: Partial<ConstructorParameters<typeof DurableWrites>[1]> = {}) {
  return new DurableWrites(log, {
    additionalSensitive: [],
    logger: quiet,
    holdMs: 60_000,
    onState: () => undefined,
    ...options,
  });
}

describe("durable write queue entry ids", () => {
  it("entry ids order numerically, not lexically, by milliseconds and then by sequence", () => {
    assert.ok(compareIds("9-0", "10-0") < 0);
    assert.ok(compareIds("10-0", "9-0") > 0);
    assert.ok(compareIds("5-2", "5-10") < 0);
    assert.ok(compareIds("5-10", "6-0") < 0);
    assert.equal(compareIds("7-3", "7-3"), 0);
    assert.equal(oldestId(["10-0", undefined, "9-5", "9-10"]), "9-5");
    assert.equal(newestId(["10-0", undefined, "9-5", "10-1"]), "10-1");
    assert.equal(oldestId([undefined]), undefined);
  });

  it("the id after an id is its next sequence: a trim at it removes that id and keeps the next millisecond's", () => {
    assert.equal(idAfter("9-0"), "9-1");
    assert.equal(idAfter("1700000000000-9"), "1700000000000-10");
    assert.ok(compareIds(idAfter("9-99"), "10-0") < 0);
  });
});

describe("what a replay skips: an object whose document already holds its value or a later one", () => {
  it("every entry of an object carries the values of the object's entries, oldest first, and which one it is", () => {
    const entries: QueueEntry[] = [
      { id: "1-0", target: "apps/t", item: upsert("x", "one") },
      { id: "2-0", target: "apps/t", item: upsert("y", "one") },
      { id: "3-0", target: "apps/t", item: upsert("x", "two") },
      { id: "4-0", target: "apps/t", item: remove("y") },
    ];
    const replayed = replayedValues(entries);
    const [one, two] = [contentDigest(upsert("x", "one").object), contentDigest(upsert("x", "two").object)];
    assert.deepEqual(replayed.get("1-0"), { values: [one, two], at: 0 });
    assert.deepEqual(replayed.get("3-0"), { values: [one, two], at: 1 });
    assert.equal(replayed.get("1-0")?.values, replayed.get("3-0")?.values, "one list per object, shared");
    assert.deepEqual(replayed.get("4-0"), {
      values: [contentDigest(upsert("y", "one").object), absentDocument],
      at: 1,
    });
    // The watch's digest, when it took one, is the one compared.
    const digested = { ...upsert("z", "one"), digest: "from-the-watch" };
    assert.deepEqual(replayedValues([{ id: "5-0", target: "apps/t", item: digested }]).get("5-0"), {
      values: ["from-the-watch"],
      at: 0,
    });
  });
});

describe("what the durable write queue keeps of a stream item", () => {
  it("an upsert and a delete are kept; a replay marker and a snapshot are not", () => {
    assert.deepEqual(durableItem(upsert("a"), []), upsert("a"));
    assert.deepEqual(durableItem(remove("a"), []), remove("a"));
    assert.equal(durableItem(marker, []), undefined);
    assert.equal(durableItem({ type: "removed", collection: configMaps }, []), undefined);
    assert.equal(durableItem(snapshot, []), undefined);
  });

  it("a core Secret's upsert is never kept, nor an upsert of an additionally sensitive type; a Secret's delete is", () => {
    assert.equal(durableItem(secretUpsert, []), undefined);
    const sealed: StreamItem = {
      type: "upsert",
      collection: sealedSecrets,
      identity: sealedIdentity("db"),
      object: { apiVersion: "bitnami.com/v1alpha1", kind: "SealedSecret", metadata: { name: "db" } },
    };
    assert.equal(durableItem(sealed, ["sealedsecrets.bitnami.com"]), undefined);
    assert.deepEqual(durableItem(sealed, []), sealed, "not sensitive unless named");
    const secretDelete: StreamItem = { type: "delete", collection: secrets, identity: secretIdentity("db") };
    assert.deepEqual(durableItem(secretDelete, []), secretDelete);
  });

  it("an entry reads back as it was written, with its author and the live object's writers", () => {
    const item: Upsert = {
      ...upsert("a", "blue"),
      author: alice,
      writers: [{ manager: "kubectl-edit", time: "2024-05-01T10:00:00Z" }],
    };
    const deleted: LiveItem = { ...remove("b"), author: alice };
    assert.deepEqual(decodeEntry("3-0", encodeEntry("apps/t", item)), { id: "3-0", target: "apps/t", item });
    assert.deepEqual(decodeEntry("4-0", encodeEntry("apps/t", deleted)), {
      id: "4-0",
      target: "apps/t",
      item: deleted,
    });
  });

  it("an entry that is not JSON, of another version, without a target, or holding a marker is unreadable, with why", () => {
    const reason = (value: string | undefined) => {
      const decoded = decodeEntry("1-0", value);
      assert.ok("unreadable" in decoded, `expected ${value} to be unreadable`);
      return decoded.unreadable;
    };
    assert.match(reason("{not json"), /1-0 is not JSON/);
    assert.match(reason(undefined), /not JSON/);
    assert.match(reason(JSON.stringify({ v: 2, target: "apps/t", item: upsert("a") })), /version 2/);
    assert.match(reason(JSON.stringify({ v: 1, item: upsert("a") })), /names no GitTarget/);
    assert.match(reason(JSON.stringify({ v: 1, target: "t", item: upsert("a") })), /names no GitTarget/);
    assert.match(reason(JSON.stringify({ v: 1, target: "apps/t", item: marker })), /no upsert or delete/);
    const { object: _object, ...objectless } = upsert("a");
    assert.match(reason(JSON.stringify({ v: 1, target: "apps/t", item: objectless })), /without its object/);
  });
});

describe("a takeover's backlog", () => {
  const entry = (id: string, target: string, name = id): QueueEntry => ({ id, target, item: upsert(name) });

  it("gives a target's entries oldest first, once", () => {
    const backlog = new Backlog(
      [entry("1-0", "apps/t"), entry("2-0", "apps/u"), entry("3-0", "apps/t")],
      10_000,
    );
    assert.deepEqual(
      backlog.take("apps/t").map((e) => e.id),
      ["1-0", "3-0"],
    );
    assert.deepEqual(backlog.take("apps/t"), []);
    assert.deepEqual(backlog.take("apps/none"), []);
  });

  it("the oldest entry is the oldest one nobody took", () => {
    const backlog = new Backlog(
      [entry("9-0", "apps/t"), entry("10-0", "apps/u"), entry("11-0", "apps/t")],
      10_000,
    );
    assert.equal(backlog.oldest(), "9-0");
    backlog.take("apps/t");
    assert.equal(backlog.oldest(), "10-0");
    backlog.take("apps/u");
    assert.equal(backlog.oldest(), undefined);
  });

  it("entries nobody took are let go only once the hold is over, with how many of each target", () => {
    const backlog = new Backlog(
      [entry("1-0", "apps/t"), entry("2-0", "apps/u"), entry("3-0", "apps/u")],
      10_000,
    );
    assert.deepEqual(backlog.expire(9_999), new Map());
    assert.equal(backlog.oldest(), "1-0");
    assert.deepEqual(
      backlog.expire(10_000),
      new Map([
        ["apps/t", 1],
        ["apps/u", 2],
      ]),
    );
    assert.equal(backlog.oldest(), undefined);
    assert.deepEqual(backlog.take("apps/u"), []);
  });
});

describe("where the durable queue may be trimmed to", () => {
  it("with nothing held and nothing in flight, it trims through the newest id", () => {
    assert.equal(trimPoint({ held: undefined, inFlight: [], newest: "10-0" }), "10-1");
    assert.equal(trimPoint({ held: undefined, inFlight: [], newest: undefined }), undefined);
  });

  it("the oldest id held bounds it", () => {
    assert.equal(trimPoint({ held: "9-0", inFlight: [], newest: "10-0" }), "9-0");
  });

  it("an append in flight, sent when the newest id known was X, bounds it at the id after X", () => {
    assert.equal(trimPoint({ held: undefined, inFlight: ["4-0"], newest: "10-0" }), "4-1");
    assert.equal(trimPoint({ held: "9-0", inFlight: ["4-0", "7-0"], newest: "10-0" }), "4-1");
    assert.equal(trimPoint({ held: "3-0", inFlight: ["4-0"], newest: "10-0" }), "3-0");
  });

  it("an append in flight sent before any id was known forbids trimming", () => {
    assert.equal(trimPoint({ held: undefined, inFlight: [undefined], newest: "10-0" }), undefined);
    assert.equal(trimPoint({ held: "9-0", inFlight: ["4-0", undefined], newest: "10-0" }), undefined);
  });
});

describe("a branch worker's durable writes", () => {
  it("a marker, a snapshot and a Secret's upsert are skipped and never reach the log", async () => {
    const log = new MemoryLog();
    const writes = durable(log);
    for (const item of [marker, snapshot, secretUpsert])
      assert.deepEqual(await writes.append("apps/t", item), { skipped: "not-kept" });
    assert.deepEqual(log.entries, []);
  });

  it("an append returns its entry's id, and the entry holds the target and the item", async () => {
    const log = new MemoryLog();
    const writes = durable(log);
    const item = { ...upsert("a"), author: alice };
    assert.deepEqual(await writes.append("apps/t", item), { id: "1-0" });
    assert.deepEqual(await writes.append("apps/t", remove("b")), { id: "2-0" });
    assert.deepEqual(decodeEntry("1-0", log.entries[0]![1]), { id: "1-0", target: "apps/t", item });
  });

  it("after a push, the log is trimmed to the oldest entry still held", async () => {
    const log = new MemoryLog();
    const writes = durable(log);
    for (const name of ["a", "b", "c", "d"]) await writes.append("apps/t", upsert(name));
    writes.settle(["3-0", undefined, "2-0"], 5_000, true);
    await writes.flushed();
    assert.deepEqual(log.ids(), ["2-0", "3-0", "4-0"]);
  });

  it("with nothing held, everything appended is trimmed", async () => {
    const log = new MemoryLog();
    const writes = durable(log);
    for (const name of ["a", "b", "c"]) await writes.append("apps/t", upsert(name));
    writes.settle([], 5_000, true);
    await writes.flushed();
    assert.deepEqual(log.ids(), []);
  });

  it("going idle trims at most once a second; a push trims at once", async () => {
    const log = new MemoryLog();
    const writes = durable(log);
    await writes.append("apps/t", upsert("a"));
    writes.settle([], 10_000, false);
    await writes.flushed();
    assert.deepEqual(log.ids(), []);

    await writes.append("apps/t", upsert("b"));
    writes.settle([], 10_999, false);
    await writes.flushed();
    assert.deepEqual(log.ids(), ["2-0"], "within the second, idle does not trim");
    writes.settle([], 11_000, false);
    await writes.flushed();
    assert.deepEqual(log.ids(), []);

    await writes.append("apps/t", upsert("c"));
    writes.settle([], 11_001, true);
    await writes.flushed();
    assert.deepEqual(log.ids(), [], "a push trims inside the second too");
  });

  it("an append in flight keeps the trim before every id it may land at", async () => {
    const log = new MemoryLog();
    const writes = durable(log);
    let land: () => void = () => undefined;
    log.landing = new Promise((resolve) => (land = resolve));
    const unknown = writes.append("apps/t", upsert("a"));
    log.put(encodeEntry("apps/t", upsert("by-another")));
    writes.settle([], 5_000, true);
    await writes.flushed();
    assert.deepEqual(log.ids(), ["1-0"], "sent before any id was known: nothing is trimmed");
    land();
    assert.deepEqual(await unknown, { id: "2-0" });

    log.landing = new Promise((resolve) => (land = resolve));
    const pending = writes.append("apps/t", upsert("b"));
    log.put(encodeEntry("apps/t", upsert("by-another")));
    writes.settle([], 6_000, true);
    await writes.flushed();
    assert.deepEqual(log.ids(), ["3-0"], "trimmed through 2-0, the newest id known when it was sent");
    land();
    assert.deepEqual(await pending, { id: "4-0" });
    assert.deepEqual(log.ids(), ["3-0", "4-0"]);
  });

  it("a failed append is reported once as the queue unavailable, and the next success as available again", async () => {
    const log = new MemoryLog();
    const states: QueueState[] = [];
    const outcomes: string[] = [];
    const writes = durable(log, {
      onState: (state) => states.push(state),
      onAppend: (outcome) => outcomes.push(outcome),
    });
    log.away = true;
    const first = await writes.append("apps/t", upsert("a"));
    assert.ok("failed" in first);
    assert.match(first.failed, /ECONNREFUSED/);
    assert.ok("failed" in (await writes.append("apps/t", upsert("b"))));
    assert.equal(states.length, 1, "reported once, not once per failure");
    const [down] = states;
    assert.equal(down?.available, false);
    assert.match(down && !down.available ? down.error : "", /ECONNREFUSED/);
    assert.ok(down && !down.available && down.since instanceof Date);

    log.away = false;
    assert.deepEqual(await writes.append("apps/t", upsert("c")), { id: "1-0" });
    assert.deepEqual(states.slice(1), [{ available: true }]);
    await writes.append("apps/t", upsert("d"));
    assert.equal(states.length, 2, "available is reported once too");
    assert.deepEqual(outcomes, ["failed", "failed", "appended", "appended"]);
  });

  it("a log held by another process now refuses the worker: no outage is reported, nothing is trimmed, and it is said once", async () => {
    const log = new MemoryLog();
    const states: QueueState[] = [];
    const outcomes: string[] = [];
    const warnings: string[] = [];
    const writes = durable(log, {
      onState: (state) => states.push(state),
      onAppend: (outcome) => outcomes.push(outcome),
      logger: { ...quiet, warn: (message: string) => warnings.push(message) },
    });
    await writes.append("apps/t", upsert("a"));
    log.fenced = true;
    const refused = await writes.append("apps/t", upsert("b"));
    assert.ok("failed" in refused);
    assert.match(refused.failed, /held by another process/);
    writes.settle([], 0, true);
    await writes.flushed();
    await writes.append("apps/t", upsert("c"));
    assert.deepEqual(log.ids(), ["1-0"], "nothing trimmed, nothing added");
    assert.deepEqual(outcomes, ["appended", "fenced", "fenced"]);
    assert.ok(
      states.every((state) => state.available),
      "never reported as the queue unavailable",
    );
    assert.equal(warnings.length, 1, warnings.join("\n"));
    assert.match(warnings[0]!, /lost the branch/);
  });

  it("an append Redis does not answer fails after its timeout, so a hanging Redis never stalls the branch", async () => {
    const log = new MemoryLog();
    const states: QueueState[] = [];
    const writes = durable(log, { onState: (state) => states.push(state), appendTimeoutMs: 50 });
    log.landing = new Promise(() => undefined);
    const appended = await writes.append("apps/t", upsert("a"));
    assert.ok("failed" in appended);
    assert.match(appended.failed, /did not answer within 50 ms/);
    assert.equal(states[0]?.available, false);
  });

  it("a takeover replays a target's entries oldest first, once, with their authors", async () => {
    const log = new MemoryLog();
    const first = { ...upsert("a", "1"), author: alice };
    const other = upsert("x");
    const second = { ...remove("b"), author: alice };
    log.put(encodeEntry("apps/t", first));
    log.put(encodeEntry("apps/u", other));
    log.put(encodeEntry("apps/t", second));
    const replayed: number[] = [];
    const writes = durable(log, { onReplayed: (entries) => replayed.push(entries) });
    assert.deepEqual(await writes.replay("apps/t", 1_000), [
      {
        id: "1-0",
        target: "apps/t",
        item: first,
        replayed: { values: [contentDigest(first.object)], at: 0 },
      },
      { id: "3-0", target: "apps/t", item: second, replayed: { values: [absentDocument], at: 0 } },
    ]);
    assert.deepEqual(replayed, [2]);
    assert.deepEqual(await writes.replay("apps/t", 1_000), []);
    assert.deepEqual(replayed, [2], "an empty replay is not counted");
  });

  it("an event a replayed entry holds, delivered again by a watch resumed behind it, is taken once: by the replay", async () => {
    const log = new MemoryLog();
    const v9 = { ...upsert("a", "9"), resourceVersion: "109" };
    const v10 = { ...upsert("a", "10"), resourceVersion: "110" };
    const gone = { ...remove("b"), resourceVersion: "111" };
    for (const item of [v9, v10, gone]) log.put(encodeEntry("apps/t", item));
    const writes = durable(log);
    assert.equal((await writes.replay("apps/t", 1_000)).length, 3);
    for (const item of [v9, v10, gone])
      assert.ok(writes.redelivered("apps/t", { ...item }), `${item.resourceVersion} delivered again`);
    assert.ok(
      !writes.redelivered("apps/t", { ...upsert("a", "11"), resourceVersion: "112" }),
      "a later event",
    );
    assert.ok(!writes.redelivered("apps/u", v10), "another target's");
    assert.ok(!writes.redelivered("apps/t", upsert("a", "9")), "an item naming no event");
  });

  it("an event older than one replayed of its object, whose entry the queue no longer held, is not taken over the replay", async () => {
    // alice's create (v1) was superseded in her window by her edit (v2), and trimmed; the cursor
    // the killed process left is behind both, so the resumed watch delivers v1 again, then v2.
    const log = new MemoryLog();
    const v2 = { ...upsert("a-0", "v2"), resourceVersion: "120" };
    log.put(encodeEntry("apps/t", v2));
    const writes = durable(log);
    assert.equal((await writes.replay("apps/t", 1_000)).length, 1);
    assert.ok(
      writes.redelivered("apps/t", { ...upsert("a-0", "v1"), resourceVersion: "110" }),
      "the older create",
    );
    assert.ok(writes.redelivered("apps/t", { ...v2 }), "the replayed edit");
    assert.ok(
      !writes.redelivered("apps/t", { ...upsert("a-1", "v1"), resourceVersion: "111" }),
      "another object's",
    );
    const v3 = { ...upsert("a-0", "v3"), resourceVersion: "130" };
    assert.ok(!writes.redelivered("apps/t", v3), "a later edit is taken");
    assert.ok(
      !writes.redelivered("apps/t", { ...upsert("a-0", "v1"), resourceVersion: "110" }),
      "and after it, nothing of the object is judged by the replay any more",
    );
    assert.ok(!writes.redelivered("apps/t", { ...upsert("a-0", "x"), resourceVersion: "not-etcd" }));
  });

  it("a target's entries nobody replayed keep the log from being trimmed past them until the hold is over", async () => {
    const log = new MemoryLog();
    log.put(encodeEntry("apps/t", upsert("a")));
    log.put(encodeEntry("apps/gone", upsert("x")));
    log.put(encodeEntry("apps/t", upsert("b")));
    log.put(encodeEntry("apps/gone", upsert("y")));
    const logger = recordingLogger();
    const writes = durable(log, { holdMs: 60_000, logger });
    await writes.replay("apps/t", 1_000);

    writes.settle([], 2_000, true);
    await writes.flushed();
    assert.deepEqual(log.ids(), ["2-0", "3-0", "4-0"], "trimmed to the oldest untaken entry");
    writes.settle([], 60_999, true);
    await writes.flushed();
    assert.deepEqual(log.ids(), ["2-0", "3-0", "4-0"], "still held, within the hold");

    writes.settle([], 61_000, true);
    await writes.flushed();
    assert.deepEqual(log.ids(), [], "let go once the hold is over");
    const dropped = logger.lines.find((l) => /never attached/.test(l.message));
    assert.equal(dropped?.level, "error");
    assert.equal(dropped?.meta.target, "apps/gone");
    assert.equal(dropped?.meta.entries, 2);
  });

  it("an unreadable entry is skipped and logged, and the rest is replayed", async () => {
    const log = new MemoryLog();
    log.put("{not json");
    log.put(encodeEntry("apps/t", upsert("a")));
    log.put(JSON.stringify({ v: 99, target: "apps/t", item: upsert("b") }));
    log.put(encodeEntry("apps/t", upsert("c")));
    const logger = recordingLogger();
    const writes = durable(log, { logger });
    const entries = await writes.replay("apps/t", 1_000);
    assert.deepEqual(
      entries.map((e) => [e.id, e.item.identity.name]),
      [
        ["2-0", "a"],
        ["4-0", "c"],
      ],
    );
    const skipped = logger.lines.filter((l) => /cannot be read/.test(l.message));
    assert.equal(skipped.length, 2);
    assert.match(String(skipped[0]?.meta.error), /1-0 is not JSON/);
    assert.match(String(skipped[1]?.meta.error), /3-0 has encoding version 99/);
  });
});
