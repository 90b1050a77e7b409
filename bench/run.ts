// make bench: how fast the operator mirrors ConfigMaps into Git, end to end and in-process, as
// hack/demo/demo.ts runs it: a local kube-apiserver, a Git server on loopback, the operator.
// Per size N (BENCH_SIZES, default 1000,10000), in a fresh namespace and repository:
//  (a) the initial snapshot of N ConfigMaps, made before the operator starts, to a pushed commit;
//  (b) on the first size, sustained edit throughput from concurrent writers;
//  (c) on the first size, edit→push latency of single edits, with idleTimeout 0s;
//  (d) the process's peak RSS during each of those phases;
//  (e) the same files written with the native git CLI, one commit and one push: the reference.
//  (g) a restart with Git matching live, and the first edit after it;
//  (p) the operator as its own process: its peak RSS (VmHWM) through a snapshot and a restart;
//  (r) on the first size, branches of one repository shared out by replicas, against one process;
//  (l) on the first size, (p) again in a repository holding 50,000 other files;
//  (h) a WebhookClaim (the tests' webhook applier) and, with the real Flux controllers, a FluxClaim
//      in place: push notice → applied, edit → push.
// Prints tables and writes bench-results/<timestamp>.json. A benchmark, not a test: it asserts
// nothing about time. See bench/README.md.
import { cpus, totalmem } from "node:os";
import { ControlPlane } from "../test/support/controlplane.ts";
import { GitServer } from "../test/support/gitserver.ts";
import { git as gitCli } from "../test/support/gitcli.ts";
import { installCrds } from "../test/support/manifests.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../test/support/reaper.ts";
import { readConfig } from "./config.ts";
import type { Harness } from "./harness.ts";
import { measureSize } from "./size.ts";
import { resultTable, workerTable, writeResult, type RunResult, type SizeResult } from "./report.ts";
import { progress } from "./sampler.ts";
import { claimSummary, measureClaim } from "./claim.ts";

const config = readConfig();
const started = Date.now();
const result: RunResult = {
  startedAt: new Date(started).toISOString(),
  durationMs: 0,
  machine: {
    cpus: cpus().length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    git: await gitCli(["--version"]),
  },
  config,
  sizes: [],
  notes: [
    "The operator runs in the benchmark's process: peak RSS (d) is the operator plus the test harness' client objects and buffers (a full GC runs before each phase when node has --expose-gc).",
    "Times to Git are the post-receive hook's clock on the Git server: when the push landed, not when a poll noticed it.",
    "The operator runs with pushCooldownMs 0 (production: 5 s between pushes of a branch).",
    `(a) and (b) run with the GitTarget's window idleTimeout ${config.window.idleTimeout}, maxDuration ${config.window.maxDuration}.`,
    "(c) runs with idleTimeout 0s and no push cooldown: in production the idleTimeout (default 5s) and the push cooldown (5 s) dominate edit→push latency, and add to it.",
  ],
};

progress(
  `GitOps Reverser benchmark: sizes ${config.sizes.join(", ")}; ${result.machine.cpus} CPUs, node ${process.version}`,
);
progress("Starting kube-apiserver, etcd and a Git server on loopback");
const user = { username: "bench", password: "bench-password" };
const [plane, git] = await Promise.all([ControlPlane.start(), GitServer.start({ users: [user] })]);
const workerRoot = makeOwnedTempDir("bench-workers");
try {
  const kc = plane.kubeConfig();
  await installCrds(kc);
  const harness: Harness = {
    kc,
    git,
    user,
    workerRoot,
    config,
    kubeconfigPath: plane.kubeconfigPath,
    logDir: plane.dir,
  };
  // Smallest first: the live edits run on it, and a snapshot that times out skips the larger sizes.
  let skip: string | undefined;
  for (const [index, size] of [...config.sizes].sort((a, b) => a - b).entries()) {
    // Filled in as the phases run, so a failure still reports what was measured.
    const sizeResult: SizeResult = {
      size,
      namespace: `bench-${index}-${size}`,
      createMs: 0,
      operatorErrors: [],
    };
    result.sizes.push(sizeResult);
    if (skip) {
      sizeResult.skipped = skip;
      progress(`N=${size}: skipped: ${skip}`);
      continue;
    }
    if (!(await measureSize(harness, sizeResult, index === 0))) {
      skip = `the snapshot of ${size} did not complete within ${config.snapshotTimeoutMs / 1000} s`;
    }
  }
  if (config.claimRounds > 0) {
    // Filled in as it runs; the FluxClaim part only when `make flux` built the controllers.
    result.claim = { objects: config.claimObjects };
    await measureClaim(
      plane,
      kc,
      git,
      user,
      workerRoot,
      { objects: config.claimObjects, rounds: config.claimRounds, batch: config.createBatch },
      result.claim,
    );
  }
} catch (err) {
  result.error = err instanceof Error ? (err.stack ?? err.message) : String(err);
  progress(`the run failed: ${result.error}`);
  process.exitCode = 1;
} finally {
  progress("Stopping the Git server and the control plane");
  await git.close().catch((err: unknown) => progress(`closing the Git server failed: ${String(err)}`));
  await plane.stop().catch((err: unknown) => progress(`stopping the control plane failed: ${String(err)}`));
}

result.durationMs = Date.now() - started;
try {
  const file = await writeResult(config.resultsDir, result);
  process.stdout.write(
    `\n${resultTable(result)}\n\nWhere the branch worker's time went:\n${workerTable(result)}\n\n`,
  );
  if (result.claim) process.stdout.write(`${claimSummary(result.claim)}\n\n`);
  for (const note of result.notes) process.stdout.write(`* ${note}\n`);
  process.stdout.write(`\nWrote ${file} (run took ${Math.round(result.durationMs / 1000)} s)\n`);
} finally {
  // Removed synchronously right before exiting, so an operator that could not stop (a commit still
  // running after a timed-out snapshot) has no turn left to write into it; exiting ends that operator.
  removeOwnedTempDir(workerRoot);
  process.exit();
}
