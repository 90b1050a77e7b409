import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { connect } from "node:net";
import { describe, it } from "node:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RemoteMovedError } from "../../../../internal/git/engine/clone.ts";
import { faultOf } from "../../../../internal/git/engine/fault.ts";
import { runGit } from "../../../../internal/git/engine/gitexec.ts";
import { Importer } from "../../../../internal/git/engine/importer.ts";

/** The error a real call rejects with. */
const rejection = (work: () => Promise<unknown>) =>
  work().then(
    () => assert.fail("expected a rejection"),
    (err: unknown) => err,
  );

/** A real connection refused: nothing listens on port 1 of the loopback. */
const refused = () =>
  new Promise<unknown>((resolve) => {
    const socket = connect({ host: "127.0.0.1", port: 1 });
    socket.once("error", resolve);
  });

/**
 * Holds the event loop until a git child of this process has exited: a zombie Node has not
 * reaped, so nothing of the exit has been heard yet and a write to its stdin fails with EPIPE.
 */
function untilGitExitedUnheard(timeoutMs = 10_000): void {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
      let stat: string;
      try {
        stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      } catch {
        continue; // it ended while the list was read
      }
      const [, comm, state, ppid] = /^\d+ \((.*)\) (\S) (\d+)/.exec(stat) ?? [];
      if (comm === "git" && state === "Z" && Number(ppid) === process.pid) return;
    }
  }
  throw new Error("no git child of this process exited");
}

describe("whose fault a failed publication is", () => {
  it("a file the filesystem cannot find or open is a local fault", async () => {
    assert.equal(faultOf(await rejection(() => readFile("/nonexistent/worktree/file.yaml"))), "local");
    const writeFailed = Object.assign(new Error("ENOSPC: no space left on device, write"), {
      code: "ENOSPC",
      syscall: "write",
    });
    assert.equal(faultOf(writeFailed), "local", "a write to a full disk names no path and is still local");
  });

  it("a repository git cannot read is a local fault", async () => {
    const dir = await mkdtemp(join(tmpdir(), "fault-"));
    try {
      assert.equal(faultOf(await rejection(() => runGit(["rev-parse", "HEAD"], { cwd: dir }))), "local");
      await runGit(["init", "-q"], { cwd: dir });
      await rm(join(dir, ".git", "objects"), { recursive: true });
      const fetch = () => runGit(["fetch", "http://127.0.0.1:1/r.git"], { cwd: dir, remote: true });
      assert.equal(faultOf(await rejection(fetch)), "local", "a fetch into a broken repository is local");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("a fast-import that exited before its input was written is a local fault, not its stdin's EPIPE", async () => {
    const dir = await mkdtemp(join(tmpdir(), "fault-"));
    try {
      await runGit(["init", "-q"], { cwd: dir });
      await rm(join(dir, ".git", "objects"), { recursive: true });
      const importer = new Importer(dir);
      untilGitExitedUnheard();
      const who = { name: "a", email: "a@example.com" };
      const { made } = importer.commit({
        parent: undefined,
        author: who,
        committer: who,
        when: 0,
        message: "m",
        files: [{ path: "a.yaml", mode: "100644", content: Buffer.from("a: 1\n") }],
      });
      const failed = await rejection(() => made);
      assert.match(String(failed), /fast-import failed/, "git's own message, not the pipe's");
      assert.equal(faultOf(failed), "local");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("a remote that cannot be reached, answers with an error or moved is not a local fault", async () => {
    assert.equal(faultOf(await refused()), "remote");
    const unreachable = () => runGit(["ls-remote", "http://127.0.0.1:1/r.git"], { remote: true });
    assert.equal(faultOf(await rejection(unreachable)), "remote", "git could not reach the server");
    assert.equal(faultOf(new RemoteMovedError("moved")), "remote");
    const deadline = AbortSignal.timeout(1);
    await new Promise((resolve) => deadline.addEventListener("abort", resolve));
    assert.equal(faultOf(deadline.reason), "remote", "a call that ran out of time");
    const permission = Object.assign(new Error("connect EACCES 10.0.0.1:443"), {
      code: "EACCES",
      syscall: "connect",
    });
    assert.equal(faultOf(permission), "remote", "EACCES from connect is a firewall, not the disk");
  });

  it("an error whose cause is a local fault is a local fault; anything unknown is the remote's", () => {
    const cause = Object.assign(new Error("EISDIR: illegal operation on a directory"), { code: "EISDIR" });
    assert.equal(faultOf(new Error("writing the folder failed", { cause })), "local");
    assert.equal(faultOf(new Error("something else")), "remote");
    assert.equal(faultOf("a string"), "remote");
  });
});
