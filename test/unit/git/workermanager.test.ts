import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { claimDirectory } from "../../../internal/git/workerdirs.ts";
import { WorkerManager, type WorkerSpec } from "../../../internal/git/workermanager.ts";
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
