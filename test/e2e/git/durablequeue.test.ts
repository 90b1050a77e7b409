// The durable write queue on a real Redis Stream and a real Git server: what one branch worker
// could not push is left in the stream, with its authors, for the next worker of the branch.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { Clone } from "../../../internal/git/engine/clone.ts";
import type { TargetSettings } from "../../../internal/git/folder/writes.ts";
import { compareIds, idAfter } from "../../../internal/git/queue/entryids.ts";
import { LogFenced, type WriteLog } from "../../../internal/git/queue/writelog.ts";
import { decodeEntry, encodeEntry, type LiveItem } from "../../../internal/git/queue/entries.ts";
import { BranchWorker, type BranchWorkerOptions } from "../../../internal/git/worker/branchworker.ts";
import { unobserved, type BranchObserver } from "../../../internal/git/worker/observer.ts";
import { WorkerManager, type WorkerSpec } from "../../../internal/git/workermanager.ts";
import { RedisConnection, type RedisAccess } from "../../../internal/redis/connection.ts";
import { EntrySeal } from "../../../internal/redis/seal.ts";
import { redisEntriesRefused } from "../../../internal/telemetry/instruments.ts";
import { RedisWriteLog, writeLogKey } from "../../../internal/redis/writelog.ts";
import { RedisCursorStore } from "../../../internal/redis/cursors.ts";
import { GitTargetEventStream, type StreamItem } from "../../../internal/stream/stream.ts";
import type { Author } from "../../../internal/types/signature.ts";
import { GitServer } from "../../support/gitserver.ts";
import { quiet } from "../../support/logger.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";
import { RedisServer } from "../../support/redis.ts";
import { configMapIdentity } from "../../support/streams.ts";
import { eventually } from "../../support/wait.ts";
import { committing, unheardFolders } from "../../support/worker.ts";
import { configMaps } from "../../unit/git/fixtures.ts";

/** A process's fencing token for the branch it holds: each log made with one is another process's. */
const newHolder = () => {
  const token = randomUUID();
  return () => ({ token });
};

const user = { username: "gitops", password: "s3cret" };
const committer = { name: "GitOps Reverser", email: "noreply@configbutler.ai" };
const alice: Author = { name: "Alice", email: "alice@example.com", kind: "user", username: "alice" };
const bob: Author = { name: "Bob", email: "bob@example.com", kind: "user", username: "bob" };

const upsert = (name: string, value: string, author: Author): StreamItem => {
  const object = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace: "apps" },
    data: { value },
  };
  return { type: "upsert", collection: configMaps, identity: configMapIdentity(name), object, author };
};

/** A RedisConnection to `address`, started: `stop` ends it. */
async function connect(
  address: string,
  access: RedisAccess = {},
): Promise<{ connection: RedisConnection; stop: () => Promise<void> }> {
  const connection = new RedisConnection(address, quiet, access);
  const abort = new AbortController();
  const running = connection.start(abort.signal);
  await eventually(() => connection.readiness() === undefined, { description: "Redis to answer" });
  return {
    connection,
    stop: async () => {
      abort.abort();
      await running;
    },
  };
}

describe("the durable write queue's Redis Stream", () => {
  let redis: RedisServer;
  let connection: RedisConnection;
  let disconnect: () => Promise<void>;

  before(async () => {
    redis = await RedisServer.start();
    ({ connection, stop: disconnect } = await connect(redis.address));
  });
  after(async () => {
    await disconnect?.();
    await redis?.stop();
  });

  it("an append returns an id after every id appended before it", async () => {
    const log = new RedisWriteLog(connection, "apps/ids", newHolder());
    const ids = [];
    for (let n = 0; n < 5; n++) ids.push(await log.append(`entry ${n}`));
    for (let n = 1; n < ids.length; n++) assert.ok(compareIds(ids[n - 1]!, ids[n]!) < 0, `${ids.join(", ")}`);
  });

  it("a read returns every entry, in order, past one page", async () => {
    const log = new RedisWriteLog(connection, "apps/pages", newHolder());
    const written: string[] = [];
    for (let n = 0; n < 1_200; n++) written.push(await log.append(`entry ${n}`));
    const read = await log.read();
    assert.equal(read.length, 1_200);
    assert.deepEqual(
      read.map(([id]) => id),
      written,
    );
    assert.deepEqual(
      read.map(([, value]) => value),
      written.map((_, n) => `entry ${n}`),
    );
  });

  it("a trim removes exactly the entries before its id, and the stream keeps an expiry", async () => {
    const log = new RedisWriteLog(connection, "apps/trim", newHolder());
    const ids = [];
    for (let n = 0; n < 5; n++) ids.push(await log.append(`entry ${n}`));
    await log.trim(ids[2]!);
    assert.deepEqual(
      (await log.read()).map(([id]) => id),
      ids.slice(2),
    );
    const client = redis.client();
    try {
      const ttl = await client.pttl(writeLogKey("apps/trim"));
      assert.ok(ttl > 0 && ttl <= 7 * 24 * 60 * 60 * 1000, `PTTL ${ttl}`);
      assert.equal(await client.xlen(writeLogKey("apps/trim")), 3);
    } finally {
      client.disconnect();
    }
    assert.match(log.where, new RegExp(`Redis at ${redis.address}, stream gitopsreverser:writes:apps/trim`));
  });

  it("a stale token's Redis writes are refused: a process that lost the branch adds nothing to its log and trims nothing once the new holder has read it; workers of one holding never fence each other", async () => {
    // Two processes, each with its own connection: the stale one, and the one that takes over.
    const staleProcess = await connect(redis.address);
    try {
      const stale = new RedisWriteLog(staleProcess.connection, "apps/fenced", newHolder());
      const before = [await stale.append("accepted before the freeze"), await stale.append("and another")];
      // Another process takes the branch over (its Lease): its worker reads the log first.
      const token = randomUUID();
      const taker = new RedisWriteLog(connection, "apps/fenced", () => ({ token }));
      assert.deepEqual(
        (await taker.read()).map(([id]) => id),
        before,
      );
      // The stale process wakes: its append and its trim are refused, and say why.
      await assert.rejects(stale.append("after the takeover"), (err: Error) => {
        assert.ok(err instanceof LogFenced, String(err));
        assert.match(err.message, new RegExp(`held by ${token} now: this process lost the branch`));
        return true;
      });
      await assert.rejects(stale.trim(idAfter(before[1]!)), LogFenced);
      // A second worker of the same holding (a worker replaced within the process) writes on.
      const successor = new RedisWriteLog(connection, "apps/fenced", () => ({ token }));
      const appended = await successor.append("the new holder's write");
      await taker.append("and its predecessor's");
      assert.deepEqual((await successor.read()).map(([id]) => id).slice(0, 3), [...before, appended]);
      // A process whose token is refused (it holds no Lease, or not safely) writes nothing at all.
      const unheld = new RedisWriteLog(connection, "apps/fenced", () => ({
        refused: "this replica does not hold the branch's Lease",
      }));
      await assert.rejects(unheld.append("from nobody"), /does not hold the branch's Lease/);
      // A holding whose Lease is not safely held claims nothing (it may have been taken while it
      // was frozen); one that claimed before writes on under its claim, which Redis still checks.
      const late = randomUUID();
      const unsafe = "the branch's Lease was last renewed 9.0 s ago, past the 6 s renew deadline";
      const frozenBeforeClaiming = new RedisWriteLog(staleProcess.connection, "apps/fenced", () => ({
        token: late,
        unclaimable: unsafe,
      }));
      await assert.rejects(frozenBeforeClaiming.append("never claimed"), (err: Error) => {
        assert.ok(err instanceof LogFenced, String(err));
        assert.match(err.message, /past the 6 s renew deadline/);
        return true;
      });
      const slowRenewal = new RedisWriteLog(connection, "apps/fenced", () => ({
        token,
        unclaimable: unsafe,
      }));
      await slowRenewal.append("claimed before its renewal ran late");
      assert.equal(await connection.client.xlen(writeLogKey("apps/fenced")), 5);
    } finally {
      await staleProcess.stop();
    }
  });

  it("a resume cursor saved by a process that lost the branch is not stored; the holder's is, and a restarted process's first save is", async () => {
    const key = {
      targetUid: "uid-1",
      group: "",
      resource: "configmaps",
      namespace: "apps",
      labelSelector: "",
    };
    const branchKey = "apps/cursors";
    const process = async (token: string) => {
      const { connection: own, stop } = await connect(redis.address);
      const fence = (uid: string) =>
        uid === key.targetUid ? { branchKey, token: { token } } : { refused: "its GitTarget is gone" };
      return {
        cursors: new RedisCursorStore(own, quiet, fence),
        log: new RedisWriteLog(own, branchKey, () => ({ token })),
        stop,
      };
    };
    const [stale, holder] = [await process("stale"), await process("holder")];
    try {
      stale.cursors.save(key, "100");
      assert.equal(await stale.cursors.load(key), "100");
      // The new holder's worker takes the branch's log over, and saves its own cursor.
      await holder.log.read();
      holder.cursors.save(key, "200");
      assert.equal(await holder.cursors.load(key), "200");
      // A load flushes what its store has pending first: the stale save was tried, and refused.
      stale.cursors.save(key, "300");
      assert.equal(await stale.cursors.load(key), "200", "the stale process's cursor is not stored");
      // The process after a restart of the holder saves from its first save on, before its
      // worker has read anything: it is the branch's newest holding.
      const restarted = await process("restarted");
      try {
        restarted.cursors.save(key, "400");
        assert.equal(await restarted.cursors.load(key), "400");
        holder.cursors.save(key, "500");
        assert.equal(await holder.cursors.load(key), "400", "the process before the restart is fenced");
      } finally {
        await restarted.stop();
      }
    } finally {
      await Promise.all([stale.stop(), holder.stop()]);
    }
  });

  it("with Redis away an append rejects at once instead of waiting for it", async () => {
    const away = await RedisServer.start();
    const { connection: awayConnection, stop } = await connect(away.address);
    try {
      const log = new RedisWriteLog(awayConnection, "apps/away", newHolder());
      await log.append("before");
      await away.stop();
      const started = Date.now();
      const outcome = await Promise.race([
        log.append("during").then(
          (id) => `appended ${id}`,
          (err: unknown) => err as Error,
        ),
        new Promise<string>((resolve) => setTimeout(() => resolve("still waiting after 5 s"), 5_000)),
      ]);
      assert.ok(outcome instanceof Error, String(outcome));
      assert.ok(Date.now() - started < 2_000, `rejected after ${Date.now() - started} ms`);
    } finally {
      await stop();
    }
  });
});

describe("a branch worker's durable write queue", () => {
  let redis: RedisServer;
  let connection: RedisConnection;
  let disconnect: () => Promise<void>;
  let git: GitServer;
  let dir: string;
  const running: BranchWorker[] = [];

  const xlen = (branch: string) => connection.client.xlen(writeLogKey(branch));

  /** A worker of the branch whose log is `queue.log`, cloning `url` afresh, stopped after the tests. */
  function worker(url: string, queue: BranchWorkerOptions["queue"], observer?: BranchObserver): BranchWorker {
    const subject = new BranchWorker({
      clone: new Clone({ dir: join(dir, `clone-${running.length}`), url, branch: "main", auth: user }),
      committer,
      bufferLimitBytes: 8 * 1024 * 1024,
      pushCooldownMs: 0,
      shutdownGraceMs: 2_000,
      materialize: committing(committer),
      folders: unheardFolders,
      logger: quiet,
      queue,
      ...(observer ? { observer } : {}),
    });
    running.push(subject);
    return subject;
  }

  /** A repository with one commit, its branch's log key, and a GitTarget writing clusters/dev. */
  async function repository(name: string, target: Partial<TargetSettings> & { key: string }) {
    const url = await git.createRepository(name);
    const start = await git.pushForeignCommit(name, {
      files: { "README.md": "# State\n" },
      message: "Start",
    });
    const settings: TargetSettings = {
      path: "clusters/dev",
      timers: { idleTimeoutMs: 0, maxDurationMs: 60_000 },
      prune: "OnEvent",
      ...target,
    };
    return { url, start, branch: `apps/${name}`, target: settings };
  }

  before(async () => {
    [redis, git] = await Promise.all([RedisServer.start(), GitServer.start({ users: [user] })]);
    ({ connection, stop: disconnect } = await connect(redis.address));
    dir = makeOwnedTempDir("durablequeue");
  });
  after(async () => {
    await git?.start();
    for (const subject of running) await subject.stop();
    await disconnect?.();
    await redis?.stop();
    await git?.close();
    if (dir) removeOwnedTempDir(dir);
  });

  it("a worker that could not push before it stopped leaves its writes, with their authors, to the next worker of the branch", async () => {
    const { url, start, branch, target } = await repository("takeover", {
      key: "apps/t",
      timers: { idleTimeoutMs: 300, maxDurationMs: 60_000 },
    });
    const items = [
      upsert("a", "first", alice),
      upsert("a", "second", alice),
      upsert("b", "only", bob),
      upsert("c", "only", alice),
    ];

    // The first worker never reaches its remote: every write it accepts stays unpushed.
    await git.stop();
    const first = worker(url, { log: new RedisWriteLog(connection, branch, newHolder()) });
    first.start();
    for (const item of items) await first.accept(target, item);
    const unpublished = await first.stop();
    assert.ok(unpublished, "the first worker could not publish");
    assert.equal(await git.branchHead("takeover", "main"), start);

    // The stream holds each ConfigMap's last value, with its author.
    const kept = new Map<string, { value: string; author: string }>();
    for (const [id, fields] of await connection.client.xrange(writeLogKey(branch), "-", "+")) {
      const entry = decodeEntry(id, fields[1]);
      assert.ok(!("unreadable" in entry), JSON.stringify(entry));
      assert.equal(entry.target, "apps/t");
      assert.equal(entry.item.type, "upsert");
      if (entry.item.type !== "upsert") continue;
      kept.set(entry.item.identity.name, {
        value: (entry.item.object as { data: { value: string } }).data.value,
        author: entry.item.author?.username ?? "none",
      });
    }
    assert.deepEqual(Object.fromEntries(kept), {
      a: { value: "second", author: "alice" },
      b: { value: "only", author: "bob" },
      c: { value: "only", author: "alice" },
    });

    // The next worker of the branch, on a remote it reaches, replays them before anything else.
    await git.start();
    const next = worker(url, { log: new RedisWriteLog(connection, branch, newHolder()) });
    await next.replay(target);
    next.start();
    const file = (name: string) => `clusters/dev/apps/configmaps/${name}.yaml`;
    await eventually(
      async () => {
        for (const [name, value] of [
          ["a", "second"],
          ["b", "only"],
          ["c", "only"],
        ] as const)
          if (!(await git.fileAt("takeover", "main", file(name)))?.includes(`value: ${value}`)) return false;
        return true;
      },
      { description: "each ConfigMap's last value on the remote" },
    );
    const authorsOf = async (name: string) =>
      (await git.gitIn("takeover", ["log", "--format=%an <%ae>", "main", "--", file(name)]))
        .split("\n")
        .filter(Boolean);
    assert.deepEqual(await authorsOf("a"), ["Alice <alice@example.com>"]);
    assert.deepEqual(await authorsOf("b"), ["Bob <bob@example.com>"]);
    assert.deepEqual(await authorsOf("c"), ["Alice <alice@example.com>"]);

    // One commit per window (alice's a, bob's b, alice's c), none empty, none twice.
    const commits = (await git.gitIn("takeover", ["rev-list", "--reverse", `${start}..main`]))
      .split("\n")
      .filter(Boolean);
    const touched = [];
    for (const commit of commits) {
      const paths = (
        await git.gitIn("takeover", ["diff-tree", "--no-commit-id", "--name-only", "-r", commit])
      )
        .split("\n")
        .filter((path) => path.includes("/configmaps/"));
      assert.ok(paths.length > 0, `commit ${commit} writes no ConfigMap`);
      touched.push(paths);
    }
    assert.deepEqual(touched, [[file("a")], [file("b")], [file("c")]]);

    await eventually(async () => (await xlen(branch)) === 0, {
      description: "the stream trimmed empty once the push landed",
    });
  });

  it("a worker replaced while its remote is away (its credential rotated) leaves what it could not push to its successor, which replays it before the stream's next items", async () => {
    const { url, start, branch, target } = await repository("replaced", { key: "apps/r" });
    const manager = new WorkerManager({
      root: join(dir, "manager"),
      bufferLimitBytes: 8 * 1024 * 1024,
      pushCooldownMs: 0,
      shutdownGraceMs: 2_000,
      additionalSensitive: [],
      logger: quiet,
      writeLog: (key) => new RedisWriteLog(connection, key, newHolder()),
    });
    const stop = new AbortController();
    const managing = manager.start(stop.signal);
    const spec = (identity: string): WorkerSpec => ({
      key: branch,
      uid: "uid-replaced",
      url,
      branch: "main",
      auth: user,
      committer,
      identity,
    });
    const stream = new GitTargetEventStream({ namespace: "apps", name: "r" });
    try {
      await git.stop();
      await manager.ensure(spec("credential-1"));
      manager.attach({ namespace: "apps", name: "r" }, branch, target, stream);
      stream.push(upsert("x", "one", alice));
      stream.push(upsert("y", "one", bob));
      await eventually(async () => (await xlen(branch)) === 2, { description: "both writes in the queue" });

      // The credential rotated: the worker is replaced, and its last publication fails.
      await manager.ensure(spec("credential-2"));
      await git.start();
      stream.push(upsert("x", "two", alice));
      const file = (name: string) => `clusters/dev/apps/configmaps/${name}.yaml`;
      await eventually(
        async () =>
          (await git.fileAt("replaced", "main", file("x")))?.includes("value: two") === true &&
          (await git.fileAt("replaced", "main", file("y")))?.includes("value: one") === true,
        { description: "the replaced worker's writes, and the next one, on the remote" },
      );
      const history = await git.gitIn("replaced", ["log", "--reverse", "--format=%an", `${start}..main`]);
      assert.deepEqual(history.split("\n"), ["Alice", "Bob", "Alice"], "x by alice, y by bob, then x again");
    } finally {
      stream.close();
      stop.abort();
      await managing;
    }
  });

  it("a forged queue entry is never replayed: with --redis-hmac-key, an entry without the operator's signature is dropped and counted", async () => {
    const { url, branch, target } = await repository("forged", {
      key: "apps/f",
      timers: { idleTimeoutMs: 300, maxDurationMs: 60_000 },
    });
    const file = (name: string) => `clusters/dev/apps/configmaps/${name}.yaml`;
    const refused = async () =>
      (await redisEntriesRefused.get()).values.find((v) => v.labels.stream === "writes")?.value ?? 0;
    const keyed = await connect(redis.address, { hmacKey: "the replicas' key" });
    try {
      // A worker that could not push leaves its signed write in the stream.
      await git.stop();
      const first = worker(url, { log: new RedisWriteLog(keyed.connection, branch, newHolder()) });
      first.start();
      await first.accept(target, upsert("signed", "kept", alice));
      assert.ok(await first.stop(), "the first worker could not publish");

      // Someone who may write to Redis but has not the key: well-formed entries, one unsigned,
      // one signed with another key, and the signed one's value copied under its signature.
      const stream = writeLogKey(branch);
      const forged = (name: string) => encodeEntry("apps/f", upsert(name, "forged", bob) as LiveItem);
      await connection.client.xadd(stream, "*", "write", forged("unsigned"));
      const other = forged("other-key");
      await connection.client.xadd(
        stream,
        "*",
        "write",
        other,
        ...new EntrySeal("not it").fields(stream, other),
      );
      const [signed] = await connection.client.xrange(stream, "-", "+", "COUNT", 1);
      const signature = signed![1].at(-1)!;
      await connection.client.xadd(stream, "*", "write", forged("copied"), "sig", signature);
      // And after them a write of the operator's own, by the same author as the forged ones: once
      // it is on the remote, a forged entry replayed would be there too (the same window or before).
      const later = encodeEntry("apps/f", upsert("later", "kept", bob) as LiveItem);
      await connection.client.xadd(
        stream,
        "*",
        "write",
        later,
        ...keyed.connection.seal.fields(stream, later),
      );
      // And one more forged entry, the newest of all.
      await connection.client.xadd(stream, "*", "write", forged("last"));
      const before = await refused();

      await git.start();
      const next = worker(url, { log: new RedisWriteLog(keyed.connection, branch, newHolder()) });
      await next.replay(target);
      next.start();
      await eventually(
        async () =>
          (await git.fileAt("forged", "main", file("signed")))?.includes("value: kept") === true &&
          (await git.fileAt("forged", "main", file("later")))?.includes("value: kept") === true,
        { description: "the signed writes on the remote" },
      );
      for (const name of ["unsigned", "other-key", "copied", "last"])
        assert.equal(await git.fileAt("forged", "main", file(name)), undefined, `${name} was replayed`);
      assert.equal((await refused()) - before, 4, "each forged entry counted");
      // Never used, and not kept: trimmed with what was pushed, so no later takeover reads them.
      await eventually(async () => (await xlen(branch)) === 0, {
        description: "the stream trimmed empty, the forged entries with it",
      });
    } finally {
      await keyed.stop();
    }
  });

  it("a crash between a push landing and its trim commits nothing twice: the next worker skips what Git already holds", async () => {
    const { url, branch, target } = await repository("untrimmed", { key: "apps/u" });
    const file = (name: string) => `clusters/dev/apps/configmaps/${name}.yaml`;
    // The first worker's pushes land, but it dies before any trim: its log never trims.
    const log = new RedisWriteLog(connection, branch, newHolder());
    const untrimmed: WriteLog = {
      where: log.where,
      append: (value) => log.append(value),
      read: () => log.read(),
      trim: () => Promise.resolve(),
    };
    const first = worker(url, { log: untrimmed });
    first.start();
    await first.accept(target, upsert("x", "one", alice));
    await first.accept(target, upsert("x", "two", bob));
    await first.accept(target, upsert("y", "one", alice));
    await first.accept(target, upsert("gone", "one", bob));
    await first.accept(target, {
      type: "delete",
      collection: configMaps,
      identity: configMapIdentity("gone"),
      author: bob,
    });
    await eventually(
      async () =>
        (await git.fileAt("untrimmed", "main", file("x")))?.includes("value: two") === true &&
        (await git.fileAt("untrimmed", "main", file("y")))?.includes("value: one") === true &&
        (await git.fileAt("untrimmed", "main", file("gone"))) === undefined &&
        first.backlog === 0,
      { description: "every write pushed by the first worker" },
    );
    const head = await git.branchHead("untrimmed", "main");
    // One more value of x that never reaches the remote: the log's tail is not in Git.
    await git.stop();
    await first.accept(target, upsert("x", "three", alice));
    assert.ok(await first.stop(), "the last write was not published");
    assert.equal(await xlen(branch), 6, "the log still holds every write");

    await git.start();
    const next = worker(url, { log: new RedisWriteLog(connection, branch, newHolder()) });
    await next.replay(target);
    next.start();
    await eventually(async () => (await xlen(branch)) === 0, {
      description: "the replayed writes settled and the log trimmed",
    });
    // Only x's last value is new: one commit, alice's; one and two, y and gone are in Git already.
    const made = (await git.gitIn("untrimmed", ["log", "--format=%an", `${head}..main`])).split("\n");
    assert.deepEqual(made, ["Alice"], "nothing committed again, and x's last value once");
    assert.match((await git.fileAt("untrimmed", "main", file("x"))) ?? "", /value: three/);
  });

  it("an edit of a suspended GitTarget leaves the durable queue without a push", async () => {
    const { url, start, branch, target } = await repository("suspended", { key: "apps/s", suspend: true });
    const outcomes: string[] = [];
    const subject = worker(
      url,
      { log: new RedisWriteLog(connection, branch, newHolder()) },
      // What the queue's appends came to, as the observer hears them (replays aside).
      {
        ...unobserved,
        queue: (event) => {
          if (event !== "replayed") outcomes.push(event);
        },
      },
    );
    subject.start();
    await subject.accept(target, upsert("paused", "edited", alice));
    assert.deepEqual(outcomes, ["appended"]);

    await eventually(async () => (await xlen(branch)) === 0, {
      timeoutMs: 10_000,
      description: "the suspended target's edit trimmed from the stream",
    });
    assert.equal(subject.backlog, 0);
    assert.equal(await git.branchHead("suspended", "main"), start, "no commit was made");
  });
});
