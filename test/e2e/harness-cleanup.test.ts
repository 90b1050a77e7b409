import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createInterface } from "node:readline";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { typeScript } from "../support/binaries.ts";
import { ControlPlane } from "../support/controlplane.ts";
import { sweepOrphanedTempDirs } from "../support/reaper.ts";
import { eventually } from "../support/wait.ts";

const fixture = fileURLToPath(new URL("./fixtures/hold-controlplane.ts", import.meta.url));

/** `pgrep -a -f <dir>`: every process whose command line names the control plane's directory. */
function processesNaming(dir: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile("pgrep", ["-a", "-f", dir], (err, stdout) => {
      // pgrep exits 1 when nothing matches.
      if (err && err.code !== 1) reject(new Error(`pgrep failed: ${err.message}`));
      else resolve(stdout.trim());
    });
  });
}

async function holdControlPlaneInChild() {
  const child = spawn(process.execPath, [...typeScript, fixture], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.once("exit", (_code, signal) => resolve(signal)),
  );
  const firstLine = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).once("line", resolve);
    child.once("exit", () => reject(new Error("the fixture exited before its control plane was up")));
  });
  const started = JSON.parse(firstLine) as { dir: string; pids: { etcd: number; kubeApiserver: number } };
  return { child, exited, ...started };
}

describe("harness cleanup", () => {
  it("stop() leaves no process and no directory behind", async () => {
    const plane = await ControlPlane.start();
    assert.match(await processesNaming(plane.dir), /kube-apiserver/);
    await plane.stop();
    assert.equal(await processesNaming(plane.dir), "");
    assert.equal(existsSync(plane.dir), false);
  });

  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    it(`an interrupted test process (${signal}) takes etcd, kube-apiserver and its directory with it`, async () => {
      const held = await holdControlPlaneInChild();
      const running = await processesNaming(held.dir);
      assert.match(running, /etcd/);
      assert.match(running, /kube-apiserver/);

      held.child.kill(signal);
      assert.equal(await held.exited, signal);
      await eventually(async () => (await processesNaming(held.dir)) === "", {
        timeoutMs: 10_000,
        description: "etcd and kube-apiserver to exit",
      });
      assert.equal(existsSync(held.dir), false);
    });
  }

  it("a killed test process takes its children with it, and the next harness sweeps its directory", async () => {
    const held = await holdControlPlaneInChild();
    held.child.kill("SIGKILL");
    await held.exited;
    await eventually(async () => (await processesNaming(held.dir)) === "", {
      timeoutMs: 10_000,
      description: "the parent-death signal to end etcd and kube-apiserver",
    });
    assert.equal(existsSync(held.dir), true, "nothing could clean up inside a killed process");
    sweepOrphanedTempDirs();
    assert.equal(existsSync(held.dir), false);
  });
});
