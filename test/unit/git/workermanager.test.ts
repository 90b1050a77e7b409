import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { claimDirectory } from "../../../internal/git/workerdirs.ts";
import { WorkerManager, type WorkerSpec } from "../../../internal/git/workermanager.ts";
import type { TargetSettings } from "../../../internal/git/folder/writes.ts";
import { GitTargetEventStream, type StreamItem } from "../../../internal/stream/stream.ts";
import { typeScript } from "../../support/binaries.ts";
import { eventually } from "../../support/wait.ts";
import { quiet } from "../../support/logger.ts";

const root = mkdtempSync(join(tmpdir(), "workermanager-test-"));
const manager = (dir: string) =>
  new WorkerManager({
    root: dir,
    bufferLimitBytes: 1024,
    additionalSensitive: [],
    logger: quiet,
  });
const spec = (uid: string): WorkerSpec => ({
  key: `team-a/${uid}`,
  uid,
  url: "http://127.0.0.1:1/repo.git",
  branch: "main",
  auth: undefined,
  committer: { name: "GitOps Reverser", email: "noreply@configbutler.ai" },
  identity: "provider-uid|url|1",
});

/** Another operator on the host: a real process that claims `uid` under `dir` and keeps running. */
async function otherOperator(dir: string, uid: string): Promise<ChildProcess> {
  const module = new URL("../../../internal/git/workerdirs.ts", import.meta.url).href;
  const script =
    `const { claimDirectory } = await import(${JSON.stringify(module)});` +
    `await claimDirectory(${JSON.stringify(dir)}, ${JSON.stringify(uid)});` +
    `console.log("claimed"); setInterval(() => undefined, 60_000);`;
  const child = spawn(process.execPath, [...typeScript, "--input-type=module", "-e", script], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  await eventually(() => out.includes("claimed"), {
    timeoutMs: 30_000,
    description: "the other process's claim",
  });
  return child;
}

async function stopped(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
}

describe("the worker manager's sweep", () => {
  after(() => rmSync(root, { recursive: true, force: true }));

  it("removes every clone directory no live worker uses, and keeps the ones in use", async () => {
    for (const uid of ["in-use", "left-by-a-deleted-gitbranch"])
      mkdirSync(join(root, uid, ".git"), { recursive: true });
    const workers = manager(root);
    await workers.ensure(spec("in-use"));
    await workers.sweep();
    assert.equal(existsSync(join(root, "in-use")), true);
    assert.equal(existsSync(join(root, "left-by-a-deleted-gitbranch")), false);

    await workers.release("team-a/in-use");
    assert.equal(existsSync(join(root, "in-use")), false, "a released worker takes its clone with it");
    assert.equal(existsSync(join(root, "in-use.owner")), false, "and gives up its claim");
  });

  it("keeps a directory an existing GitBranch names while no worker runs for it", async () => {
    const dir = mkdtempSync(join(root, "named-"));
    mkdirSync(join(dir, "named", ".git"), { recursive: true });
    mkdirSync(join(dir, "unnamed", ".git"), { recursive: true });
    const workers = new WorkerManager({
      root: dir,
      bufferLimitBytes: 1024,
      additionalSensitive: [],
      namedByGitBranch: (uid) => uid === "named",
      logger: quiet,
    });
    await workers.sweep();
    assert.equal(existsSync(join(dir, "named")), true);
    assert.equal(existsSync(join(dir, "unnamed")), false);
  });

  it("the sweep leaves a directory another live process owns", async () => {
    const dir = mkdtempSync(join(root, "shared-"));
    const other = await otherOperator(dir, "theirs");
    try {
      mkdirSync(join(dir, "theirs", ".git"), { recursive: true });
      await manager(dir).sweep();
      assert.equal(existsSync(join(dir, "theirs", ".git")), true, "another running operator's clone is kept");
      assert.equal(existsSync(join(dir, "theirs.owner")), true, "and so is its claim");

      await stopped(other);
      await manager(dir).sweep();
      assert.equal(existsSync(join(dir, "theirs")), false, "a dead process's clone is left over");
      assert.equal(existsSync(join(dir, "theirs.owner")), false);
    } finally {
      await stopped(other);
    }
  });

  it("takes over a directory a dead process owned, and refuses one a running process owns", async () => {
    const dir = mkdtempSync(join(root, "takeover-"));
    const gone = await otherOperator(dir, "left-behind");
    await stopped(gone);
    const workers = manager(dir);
    await workers.ensure(spec("left-behind"));
    const running = await otherOperator(dir, "busy");
    try {
      await assert.rejects(workers.ensure(spec("busy")), /belongs to the running process \d+.*--worker-root/);
      assert.equal(workers.worker("team-a/busy"), undefined);
      await workers.sweep();
      const owner = JSON.parse(readFileSync(join(dir, "left-behind.owner"), "utf8")) as { pid: number };
      assert.equal(owner.pid, process.pid, "the claim taken over is ours now");
      // The directory is ours: claiming it again changes nothing.
      await claimDirectory(dir, "left-behind");
    } finally {
      await stopped(running);
    }
  });
});

describe("the worker its GitBranch runs, and the targets attached to it", () => {
  const dir = mkdtempSync(join(tmpdir(), "workermanager-run-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const target = { namespace: "team-a", name: "t" };
  const settings = { key: "team-a/t" } as TargetSettings;

  it("tells who listens when a worker starts, is replaced or is released, and not when it stays", async () => {
    const workers = manager(dir);
    const changed: string[] = [];
    workers.onWorkerChanged((key) => changed.push(key));
    assert.equal(workers.has("team-a/b1"), false);

    await workers.ensure(spec("b1"));
    assert.equal(workers.has("team-a/b1"), true);
    assert.equal(workers.has("team-a/b1", "b1"), true);
    assert.equal(
      workers.has("team-a/b1", "another-uid"),
      false,
      "a recreated GitBranch's worker is not this one",
    );
    await workers.ensure(spec("b1"));
    assert.deepEqual(changed, ["team-a/b1"], "the same spec keeps its worker, unannounced");

    await workers.ensure({ ...spec("b1"), identity: "provider-uid|url|2" });
    assert.deepEqual(changed, ["team-a/b1", "team-a/b1"], "a rotated credential replaces it");

    await workers.release("team-a/b1");
    assert.equal(workers.has("team-a/b1"), false);
    assert.deepEqual(changed, ["team-a/b1", "team-a/b1", "team-a/b1"]);
    await workers.release("team-a/b1");
    assert.equal(changed.length, 3, "releasing no worker announces nothing");
  });

  it("attaches a target only to a running worker of its GitBranch's uid, and never makes one", async () => {
    const workers = manager(dir);
    const wanted: string[] = [];
    workers.onWorkerWanted((key) => wanted.push(key));
    const stream = new GitTargetEventStream(target);
    const branch = { key: "team-a/b2", uid: "b2" };
    const none = await workers.attachRunning(target, branch, settings, stream);
    assert.deepEqual(none, { attached: false, reason: "its GitBranch team-a/b2 runs no branch worker yet" });
    assert.equal(workers.isAttached(target), false);
    assert.equal(workers.has("team-a/b2"), false, "attaching makes no worker");
    assert.equal(workers.wanted("team-a/b2"), true, "a served target asked for one");
    await workers.attachRunning(target, branch, settings, stream);
    assert.deepEqual(wanted, ["team-a/b2"], "its GitBranch hears the first ask only");

    await workers.ensure(spec("b2"));
    const old = await workers.attachRunning(target, { ...branch, uid: "old-uid" }, settings, stream);
    assert.equal(old.attached, false);
    assert.deepEqual(await workers.attachRunning(target, branch, settings, stream), { attached: true });
    assert.equal(workers.isAttached(target), true);

    await workers.release("team-a/b2");
    assert.equal(workers.isAttached(target), false, "a released worker's targets feed nothing");
    assert.equal(workers.wanted("team-a/b2"), false, "a released worker is asked for afresh");
  });

  it("a reader that took an item while its GitBranch replaced the worker hands it to the new one", async () => {
    const stream = new GitTargetEventStream(target);
    const item = { type: "replaying", collection: { key: "c1" } } as unknown as StreamItem;
    let replacing = false;
    const workers = new WorkerManager({
      root: dir,
      bufferLimitBytes: 1024,
      additionalSensitive: [],
      logger: quiet,
      // Asked between stopping the old worker and making the new one: the item arrives then,
      // so its reader finds no worker and waits, holding it.
      holds: () => {
        if (replacing) stream.push(item);
        return true;
      },
    });
    const taken: StreamItem[] = [];
    stream.onTaken((value) => taken.push(value));
    const branch = { key: "team-a/b4", uid: "b4" };
    const first = await workers.ensure(spec("b4"));
    assert.deepEqual(await workers.attachRunning(target, branch, settings, stream), { attached: true });

    replacing = true;
    const second = await workers.ensure({ ...spec("b4"), identity: "provider-uid|url|2" });
    replacing = false;
    assert.notEqual(second, first, "a rotated credential replaces the worker");
    await eventually(() => taken.length === 1, {
      timeoutMs: 10_000,
      description: `the item taken by the new worker (the reader is at ${stream.readerAt})`,
    });
    assert.equal(taken[0], item);
    await workers.release("team-a/b4");
  });

  it("holds a worker its GitBranch cannot run now: it keeps running, takes no target, and resumes", async () => {
    const workers = manager(dir);
    const changed: string[] = [];
    workers.onWorkerChanged((key) => changed.push(key));
    const stream = new GitTargetEventStream(target);
    const branch = { key: "team-a/b3", uid: "b3" };
    await workers.hold("team-a/b3", "nothing runs");
    assert.deepEqual(changed, [], "holding no worker announces nothing");

    const running = await workers.ensure(spec("b3"));
    assert.deepEqual(await workers.attachRunning(target, branch, settings, stream), { attached: true });
    await workers.hold("team-a/b3", "the credential Secret team-a/git does not exist");
    assert.equal(workers.worker("team-a/b3"), running, "the worker is not stopped");
    assert.equal(workers.isAttached(target), false, "its targets are detached");
    assert.deepEqual(await workers.attachRunning(target, branch, settings, stream), {
      attached: false,
      reason:
        "its GitBranch team-a/b3's worker takes no target: the credential Secret team-a/git does not exist",
    });
    await workers.hold("team-a/b3", "the credential Secret team-a/git does not exist");
    assert.deepEqual(changed, ["team-a/b3", "team-a/b3"], "made, then held once");

    assert.equal(await workers.ensure(spec("b3")), running, "the same spec resumes the same worker");
    assert.deepEqual(changed, ["team-a/b3", "team-a/b3", "team-a/b3"], "its targets hear it resumed");
    assert.deepEqual(await workers.attachRunning(target, branch, settings, stream), { attached: true });
    await workers.release("team-a/b3");
  });
});
