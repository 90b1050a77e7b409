import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Publication, type GitEvent } from "../../../../internal/git/worker/publication.ts";
import { TargetFolders, type TargetFolderCallbacks } from "../../../../internal/git/folder/targetfolders.ts";
import type { Change, DecidedWrite } from "../../../../internal/git/folder/writes.ts";
import { FakeClone, FakeRemote } from "./fakeremote.ts";
import { configMaps } from "../fixtures.ts";
import { configMapIdentity } from "../../../support/streams.ts";
import { quiet } from "../../../support/logger.ts";

const target = {
  key: "apps/t",
  path: "f",
  timers: { idleTimeoutMs: 0, maxDurationMs: 0 },
  prune: "Always" as const,
};
const collection = configMaps;

const identity = configMapIdentity;
const configMap = (name: string, value: string) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, namespace: "apps" },
  data: { value },
});
const document = (name: string, value: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: apps\ndata:\n  value: ${value}\n`;
const upsert = (name: string, value: string): Change => ({
  op: "upsert",
  identity: identity(name),
  object: configMap(name, value),
});
const live = (...changes: Change[]): DecidedWrite => ({ target, reason: "live", changes });

function setup(
  onPlaced: TargetFolderCallbacks["onPlaced"] = () => undefined,
  commitBudgetMs?: number,
  onGit?: (event: GitEvent) => void,
  mayPush?: () => string | undefined,
) {
  const remote = new FakeRemote();
  remote.pushForeign((files) => files.set("f/README.md", "# folder\n"));
  const clone = new FakeClone(remote);
  const folders = new TargetFolders(
    { holdMs: 60_000, budgetBytes: 1 << 20 },
    {
      onReport: () => undefined,
      onDropped: () => undefined,
      onPlaced,
      onResyncRequested: () => undefined,
    },
  );
  const publication = new Publication({
    repository: clone,
    folders,
    logger: quiet,
    // The shortest pauses between attempts on a moving remote.
    random: () => 0,
    commitBudgetMs,
    ...(onGit ? { onGit } : {}),
    ...(mayPush ? { mayPush } : {}),
    materialize: {
      committer: { name: "a", email: "b" },
      additionalSensitive: [],
      message: () => "m",
      onRefused: () => undefined,
    },
  });
  const cycle = (...writes: DecidedWrite[]) => publication.cycle(writes, () => undefined);
  return { remote, clone, publication, cycle, folders };
}

describe("the publication cycle's base trust", () => {
  it("fetches once on the first cycle, never trusting a checkout found on disk, and not at all on a trusted base", async () => {
    const { clone, cycle } = setup();
    assert.equal((await cycle(live(upsert("a", "one")))).kind, "pushed");
    assert.equal(clone.fetches, 1);
    assert.equal((await cycle(live(upsert("a", "two")))).kind, "pushed");
    assert.equal((await cycle(live(upsert("b", "one")))).kind, "pushed");
    assert.equal(clone.fetches, 1, "a trusted base plans straight onto its own last push");
  });

  it("a write that failed part-way leaves the checkout unknown: the next cycle costs one fetch and a reset", async () => {
    const { clone, remote, cycle } = setup();
    await cycle(live(upsert("a", "one")));
    clone.failNextWrite = true;
    const failed = await cycle(live(upsert("b", "one")));
    assert.equal(failed.kind, "failed");
    assert.equal(clone.fetches, 1);
    const retried = await cycle(live(upsert("b", "one")));
    assert.equal(retried.kind, "pushed");
    assert.equal(clone.fetches, 2);
    assert.equal(
      remote.files().get("f/apps/configmaps/b.yaml"),
      document("b", "one"),
      "the half-written file is gone",
    );
  });

  it("a local fault resets the clone: it is removed, and the next cycle clones afresh and replays what is retained", async () => {
    const { clone, remote, cycle } = setup();
    await cycle(live(upsert("a", "one")));
    const kept = live(upsert("b", "one"));
    clone.failNextWrite = Object.assign(new Error("EACCES: permission denied, open 'f/b.yaml'"), {
      code: "EACCES",
      syscall: "open",
      path: "f/b.yaml",
    });
    const failed = await cycle(kept);
    assert.deepEqual(failed, {
      kind: "failed",
      error: "EACCES: permission denied, open 'f/b.yaml'",
      fault: "local",
    });
    assert.equal(clone.discards, 1, "the clone was removed");
    const retried = await cycle(kept);
    assert.equal(retried.kind, "pushed");
    assert.equal(remote.files().get("f/apps/configmaps/b.yaml"), document("b", "one"));
    assert.equal(remote.files().get("f/apps/configmaps/a.yaml"), document("a", "one"));
  });

  it("a moved remote costs one fetch and a replay, and both changes end on the branch", async () => {
    const { clone, remote, cycle } = setup();
    await cycle(live(upsert("a", "one")));
    remote.pushForeign((files) => files.set("f/hand.yaml", document("hand", "by-hand")));
    const outcome = await cycle(live(upsert("b", "one")));
    assert.equal(outcome.kind, "pushed");
    assert.equal(clone.fetches, 2);
    assert.equal(remote.files().get("f/hand.yaml"), document("hand", "by-hand"));
    assert.equal(remote.files().get("f/apps/configmaps/b.yaml"), document("b", "one"));
  });

  it("a remote that moves under every push is contention: each move costs a fetch and a replay, and the next cycle is due within half a second, not on the outage schedule", async () => {
    const { clone, remote, publication, cycle } = setup();
    await cycle(live(upsert("a", "one")));
    let foreign = 0;
    const push = clone.push.bind(clone);
    clone.push = (root) => {
      remote.pushForeign((files) => files.set("f/busy.yaml", document("busy", `n${++foreign}`)));
      return push(root);
    };
    const write = live(upsert("b", "one"));
    const fetchesBefore = clone.fetches;
    const outcome = await cycle(write);
    assert.deepEqual(outcome, {
      kind: "contended",
      error: "the remote branch kept moving through 5 attempts",
      moves: 5,
    });
    assert.equal(clone.fetches - fetchesBefore, 4, "a fetch and a replay after each move but the last");
    assert.equal(publication.contended?.moves, 5);
    assert.ok(publication.contendedUntil - Date.now() <= 500, "the next cycle is due soon");
    assert.equal((await cycle(write)).kind, "contended");
    assert.equal(publication.contended?.moves, 10, "the moves add up until a push lands");

    clone.push = push;
    assert.equal((await cycle(write)).kind, "pushed");
    assert.equal(publication.contended, undefined, "a landed push ends the contention");
    assert.equal(publication.contendedUntil, 0);
    assert.equal(remote.files().get("f/busy.yaml"), document("busy", "n10"), "nothing of theirs is lost");
    assert.equal(remote.files().get("f/apps/configmaps/b.yaml"), document("b", "one"));
  });

  it("an unreachable remote ends a contention: the outage says what it is", async () => {
    const { clone, remote, publication, cycle } = setup();
    const push = clone.push.bind(clone);
    clone.push = (root) => {
      remote.pushForeign((files) => files.set("f/busy.yaml", document("busy", "n")));
      return push(root);
    };
    assert.equal((await cycle(live(upsert("a", "one")))).kind, "contended");
    clone.push = push;
    clone.unreachable = true;
    assert.equal((await cycle(live(upsert("a", "one")))).kind, "failed");
    assert.equal(publication.contended, undefined);
  });

  it("a replay applies the decided actions only: a snapshot's sweep never runs again, so what the newer tip added survives", async () => {
    const { remote, publication } = setup();
    remote.pushForeign((files) => files.set("f/apps/configmaps/old.yaml", document("old", "x")));
    const snapshot: DecidedWrite = {
      target,
      reason: "reconcile",
      changes: [upsert("kept", "one")],
      sweep: { collection, present: new Set(["apps/kept"]) },
    };
    // The first cycle decides: kept is written, old is swept.
    const outcome = await publication.cycle([snapshot], () => undefined);
    assert.equal(outcome.kind, "pushed");
    assert.equal(remote.files().has("f/apps/configmaps/old.yaml"), false);
    assert.deepEqual(
      snapshot.decided?.map((c) => `${c.op} ${c.identity.name}`),
      ["upsert kept", "delete old"],
    );
    remote.pushForeign((files) => files.set("f/apps/configmaps/newer.yaml", document("newer", "y")));
    // The same write replayed onto the newer tip: nothing to do for kept, and newer is never swept.
    publication.distrust();
    const replay = await publication.cycle([snapshot], () => undefined);
    assert.equal(replay.kind, "settled", "every decided action already holds on the new tip");
    assert.equal(remote.files().get("f/apps/configmaps/newer.yaml"), document("newer", "y"));
  });

  it("reports each fetch and push by outcome, and a cycle that kept its writes by why (git_* metrics)", async () => {
    const events: string[] = [];
    const { clone, remote, cycle } = setup(undefined, undefined, (e) =>
      events.push(`${e.operation}:${e.outcome}`),
    );
    await cycle(live(upsert("a", "one")));
    assert.deepEqual(events.splice(0), ["fetch:ok", "push:landed"]);
    remote.pushForeign((files) => files.set("f/hand.yaml", document("hand", "by-hand")));
    await cycle(live(upsert("b", "one")));
    assert.deepEqual(events.splice(0), ["push:rejected", "fetch:ok", "push:landed"]);
    clone.unreachable = true;
    remote.pushForeign((files) => files.set("f/hand.yaml", document("hand", "again")));
    assert.equal((await cycle(live(upsert("c", "one")))).kind, "failed");
    assert.deepEqual(events.splice(0), ["push:failed", "cycle:remote"]);
  });

  it("a replica whose branch Lease is not safely held pushes nothing: the push is fenced, every write kept", async () => {
    const events: string[] = [];
    let fence: string | undefined = "the branch's Lease was last renewed 12.0 s ago";
    const { remote, cycle } = setup(
      undefined,
      undefined,
      (e) => events.push(`${e.operation}:${e.outcome}`),
      () => fence,
    );
    const before = remote.tip;
    const fenced = await cycle(live(upsert("a", "one")));
    assert.equal(fenced.kind, "failed");
    assert.match("error" in fenced ? fenced.error : "", /may not push: the branch's Lease/);
    assert.equal(remote.tip, before, "nothing reached the remote");
    assert.deepEqual(events.splice(0), ["fetch:ok", "push:fenced", "cycle:remote"]);
    fence = undefined;
    assert.equal((await cycle(live(upsert("a", "one")))).kind, "pushed");
  });

  it("a write whose actions change nothing on the current tip settles without a push", async () => {
    const { clone, cycle } = setup();
    await cycle(live(upsert("a", "one")));
    const pushes = clone.pushes;
    assert.equal((await cycle(live(upsert("a", "one")))).kind, "settled");
    assert.equal(clone.pushes, pushes);
  });
});

describe("placement counts", () => {
  it("counts a new document's placement once, on its first commit, not again on a replay", async () => {
    const placed: string[] = [];
    const { remote, publication } = setup((_key, identity, source) =>
      placed.push(`${identity.resource} ${source}`),
    );
    const write = live(upsert("fresh", "one"));
    await publication.cycle([write], () => undefined);
    // Somebody removes the document again, and the retained write is replayed onto their tip.
    remote.tip = remote.store(new Map([...remote.files()].filter(([path]) => !path.includes("fresh"))));
    publication.distrust();
    await publication.cycle([write], () => undefined);
    assert.deepEqual(placed, ["configmaps BuiltIn"]);
  });
});

describe("prune Never", () => {
  const never = { ...target, prune: "Never" as const };
  const remove = (name: string): Change => ({ op: "delete", identity: identity(name) });
  const path = (name: string) => `f/apps/configmaps/${name}.yaml`;
  const sweeping = (settings: typeof target | typeof never, ...kept: string[]): DecidedWrite => ({
    target: settings,
    reason: "reconcile",
    changes: kept.map((name) => upsert(name, "one")),
    sweep: { collection, present: new Set(kept.map((name) => `apps/${name}`)) },
  });

  it("keeps a document on a live delete and on a snapshot's sweep", async () => {
    const { remote, cycle } = setup();
    remote.pushForeign((files) => files.set(path("old"), document("old", "x")));
    await cycle({ target: never, reason: "live", changes: [upsert("a", "one")] });
    await cycle({ target: never, reason: "live", changes: [remove("a")] });
    await cycle(sweeping(never, "kept"));
    assert.equal(remote.files().get(path("a")), document("a", "one"), "the live delete removed nothing");
    assert.equal(remote.files().get(path("old")), document("old", "x"), "the sweep removed nothing");
    assert.equal(remote.files().get(path("kept")), document("kept", "one"));
  });

  it("a replay removes nothing once the target's prune mode is Never, though its first commit removed it", async () => {
    const { remote, clone, publication, folders } = setup();
    remote.pushForeign((files) => {
      files.set(path("old"), document("old", "x"));
      files.set(path("a"), document("a", "one"));
    });
    const writes: DecidedWrite[] = [
      sweeping(target, "kept", "a"),
      { target, reason: "live", changes: [remove("a")] },
    ];
    clone.unreachable = true;
    assert.equal((await publication.cycle(writes, () => undefined)).kind, "failed");
    assert.deepEqual(
      writes.map((w) => w.decided?.map((c) => `${c.op} ${c.identity.name}`)),
      [["upsert kept", "delete old"], ["delete a"]],
      "decided under Always, unpublished",
    );
    // The target's next item brings its new settings to the worker's folder.
    folders.admit({ target: never, item: { type: "replaying", collection } }, 0, Date.now());
    clone.unreachable = false;
    assert.equal((await publication.cycle(writes, () => undefined)).kind, "pushed");
    assert.equal(remote.files().get(path("old")), document("old", "x"), "the swept document stays");
    assert.equal(remote.files().get(path("a")), document("a", "one"), "the deleted one stays");
    assert.equal(remote.files().get(path("kept")), document("kept", "one"));
  });
});

describe("a backlog is pushed while it is still being committed", () => {
  const backlog = () => ["b", "c", "d"].map((name) => live(upsert(name, "one")));

  it("a cycle pushes what it committed within its budget, and the next cycle the rest", async () => {
    // A budget of nothing: each cycle commits one write, then pushes it.
    const { clone, remote, publication } = setup(undefined, 0);
    const writes = backlog();
    const first = await publication.cycle(writes, () => undefined);
    assert.deepEqual(
      { kind: first.kind, published: "published" in first && first.published },
      {
        kind: "pushed",
        published: 1,
      },
    );
    const pushed = [...remote.files().keys()].filter((p) => p.endsWith(".yaml"));
    assert.deepEqual(pushed, ["f/apps/configmaps/b.yaml"], "only the first write is on the remote");
    const rest = await publication.cycle(writes.slice(1), () => undefined);
    assert.equal(rest.kind === "pushed" && rest.published, 1);
    assert.equal(clone.pushes, 2);
  });

  it("shutdown's cycle pushes everything, whatever the budget", async () => {
    const { clone, publication } = setup(undefined, 0);
    const outcome = await publication.cycle(backlog(), () => undefined, 60_000, true);
    assert.equal(outcome.kind === "pushed" && outcome.published, 3);
    assert.equal(clone.commits, 3);
    assert.equal(clone.pushes, 1);
  });

  it("writes committed ahead, while the push waits, are pushed as they are: no second commit, no fetch", async () => {
    const { clone, publication } = setup();
    await publication.cycle([live(upsert("a", "one"))], () => undefined);
    const writes = backlog();
    assert.equal(await publication.commitAhead(writes, () => undefined, 60_000), true);
    assert.equal(clone.commits, 4, "one for the first push, one for each write ahead");
    const outcome = await publication.cycle(writes, () => undefined);
    assert.equal(outcome.kind === "pushed" && outcome.published, 3);
    assert.equal(clone.commits, 4, "the cycle committed nothing again");
    assert.equal(clone.fetches, 1);
  });

  it("committing ahead never fetches: on an untrusted base it waits for the cycle", async () => {
    const { clone, remote, publication } = setup();
    assert.equal(await publication.commitAhead(backlog(), () => undefined, 60_000), false, "no base yet");
    await publication.cycle([live(upsert("a", "one"))], () => undefined);
    remote.pushForeign((files) => files.set("f/other.yaml", "x: y\n"));
    publication.distrust();
    assert.equal(await publication.commitAhead(backlog(), () => undefined, 60_000), false, "distrusted");
    assert.equal(clone.fetches, 1);
  });
});
