// (p) The operator as it is deployed: its own process, bundled as the image runs it
// (dist/operator.mjs, from `make build`), with the production five-second push
// cooldown. Its peak RSS is the kernel's VmHWM, free of the benchmark's own objects. Measured
// per size, before the in-process phases, on a namespace and repository of its own: the
// initial snapshot, then a restart on the clone it left with one edit sent as it starts.
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { startOperatorProcess } from "../test/support/operator.ts";
import { kustomizeBinary, repoRoot } from "../test/support/binaries.ts";
import { applyMirror, applySpreadMirror, configMapFolder, fillNamespace, targetPath } from "./cluster.ts";
import { measureThroughput, type ThroughputResult } from "./edits.ts";
import { prefillRepository } from "./largerepo.ts";
import { PushLog } from "./pushlog.ts";
import { measureRestart } from "./restart.ts";
import type { Harness } from "./harness.ts";
import { waitForSnapshot } from "./snapshot.ts";
import { sleep } from "../internal/timing/sleep.ts";

export interface ProcessResult {
  /** The namespaces its ConfigMaps were in: its own, or those it was spread over. */
  sources: string[];
  /** Operator start to the push that completed the folder. */
  snapshotMs: number | undefined;
  /** The first process's VmHWM when its snapshot was pushed. */
  snapshotPeakRssBytes: number | undefined;
  /** Its heap then, with BENCH_HEAP_SNAPSHOT_DIR (bench/heapsummary.ts reads it). */
  heapSnapshot?: string;
  /** With edits: (b)'s edit stream sent to the first process, and its VmHWM after it. */
  throughput?: ThroughputResult & { peakRssBytes: number | undefined };
  /** The second process's start to the push that carried the edit sent as it started. */
  restartFirstEditMs: number | undefined;
  /** The second process's VmHWM when that edit was pushed. */
  restartPeakRssBytes: number | undefined;
  /** Pushes the restart made before the edit's. */
  restartPushesBefore: number;
}

/** What the Dockerfile sets NODE_OPTIONS to, so the process is measured as the image runs it. */
const imageNodeOptions = "--max-semi-space-size=4";

/** Where (p) writes the process's heap once its snapshot is pushed (BENCH_HEAP_SNAPSHOT_DIR): what holds its memory. */
const heapSnapshotDir = () => process.env.BENCH_HEAP_SNAPSHOT_DIR || undefined;

/**
 * The operator process's environment: the image's NODE_OPTIONS, unless BENCH_OPERATOR_NODE_OPTIONS
 * measures others; with a heap snapshot asked for, V8 writes one on SIGUSR2.
 */
export const operatorEnvironment = (): NodeJS.ProcessEnv => {
  const options = process.env.BENCH_OPERATOR_NODE_OPTIONS ?? imageNodeOptions;
  const dir = heapSnapshotDir();
  return {
    NODE_OPTIONS: dir ? `${options} --heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${dir}` : options,
  };
};

/** Has the process write its heap (operatorEnvironment), and waits until the file is whole; its path. */
async function writeHeapSnapshot(pid: number, timeoutMs: number): Promise<string | undefined> {
  const dir = heapSnapshotDir();
  if (!dir) return undefined;
  const before = new Set(await readdir(dir));
  process.kill(pid, "SIGUSR2");
  const deadline = Date.now() + timeoutMs;
  let last = -1;
  while (Date.now() < deadline) {
    await sleep(500);
    const made = (await readdir(dir)).find((f) => f.endsWith(".heapsnapshot") && !before.has(f));
    if (!made) continue;
    const size = (await stat(join(dir, made))).size;
    // V8 writes the file in one go; its size standing still for half a second is the end.
    if (size > 0 && size === last) return join(dir, made);
    last = size;
  }
  return undefined;
}

/** The kernel's high-water mark of a process's resident set, in bytes. */
export async function peakRss(pid: number): Promise<number | undefined> {
  const status = await readFile(`/proc/${pid}/status`, "utf8").catch(() => "");
  const kib = /^VmHWM:\s+(\d+) kB/m.exec(status)?.[1];
  return kib === undefined ? undefined : Number(kib) * 1024;
}

/**
 * Fills the namespaces the size's ConfigMaps are in: `namespace` itself, or, spread over
 * `spread` namespaces as a cluster holds them, `<namespace>-0` and on, `namespace` left to the
 * mirror's own objects.
 */
async function fillSources(h: Harness, size: number, namespace: string, spread: number): Promise<string[]> {
  const { kc, config } = h;
  if (spread <= 1) {
    await fillNamespace(kc, namespace, size, config.createBatch);
    return [namespace];
  }
  await fillNamespace(kc, namespace, 0, config.createBatch);
  const sources = Array.from({ length: spread }, (_, i) => `${namespace}-${i}`);
  for (const [i, source] of sources.entries()) {
    const count = Math.floor((size * (i + 1)) / spread) - Math.floor((size * i) / spread);
    await fillNamespace(kc, source, count, config.createBatch);
  }
  return sources;
}

/**
 * Measures the operator process on a namespace of its own, filled like the size's, or on
 * `spread` namespaces sharing the size's ConfigMaps, mirrored into one GitTarget, in a
 * repository that holds `otherFiles` files besides the target folder.
 */
export async function measureProcess(
  h: Harness,
  size: number,
  namespace: string,
  options: { otherFiles?: number; withEdits?: boolean; spread?: number } = {},
): Promise<ProcessResult> {
  const otherFiles = options.otherFiles ?? 0;
  const spread = options.spread ?? 1;
  const { kc, git, user, config } = h;
  // Its own namespaces: a GitProvider's URL is immutable, and the in-process phases use theirs.
  const sources = await fillSources(h, size, namespace, spread);
  const repository = `process-${namespace}`;
  // Where the snapshot's documents go (every source's folder), and the first source's, edited.
  const folder = spread > 1 ? targetPath : configMapFolder(namespace);
  const url = await git.createRepository(repository);
  if (otherFiles > 0) await prefillRepository(git, repository, user, otherFiles);
  const log = await PushLog.install(git, repository);
  const window = { ...config.window, idleTimeout: "0s" };
  if (spread > 1) await applySpreadMirror(kc, namespace, sources, url, user, window);
  else await applyMirror(kc, namespace, url, user, window);
  const workerRoot = join(h.workerRoot, `process-${namespace}`);
  const start = () =>
    startOperatorProcess(
      h.kubeconfigPath,
      h.logDir,
      [
        `--in-cluster-kube-providers=${namespace}/self`,
        `--worker-root=${workerRoot}`,
        `--kustomize-path=${kustomizeBinary()}`,
        "--log-level=error",
      ],
      operatorEnvironment(),
      join(repoRoot, "dist/operator.mjs"),
    );

  const started = Date.now();
  let operator = start();
  const snapshot = await waitForSnapshot({
    git,
    repository,
    folder,
    size,
    started,
    timeoutMs: config.snapshotTimeoutMs,
    log,
    workerRoot,
    only: (path) => path.includes("/configmaps/"),
  });
  const snapshotPeakRssBytes = await peakRss(operator.process.pid);
  const heapSnapshot = await writeHeapSnapshot(operator.process.pid, config.snapshotTimeoutMs);
  let throughput: ProcessResult["throughput"];
  if (options.withEdits && snapshot.ms !== undefined) {
    const { edits, writers, editRate: rate, settleTimeoutMs } = config;
    const stream = {
      kc,
      git,
      repository,
      targets: [{ namespace, folder, branch: "main" }],
      size,
      edits,
      writers,
      rate,
      settleTimeoutMs,
      log,
    };
    const result = await measureThroughput(stream);
    throughput = { ...result, peakRssBytes: await peakRss(operator.process.pid) };
  }
  await operator.process.stop(30_000);

  try {
    const restart = await measureRestart({
      kc,
      namespace: sources[0]!,
      folder: configMapFolder(sources[0]!),
      log,
      timeoutMs: config.snapshotTimeoutMs,
      start: () => (operator = start()),
    });
    return {
      sources,
      snapshotMs: snapshot.ms,
      snapshotPeakRssBytes,
      ...(heapSnapshot ? { heapSnapshot } : {}),
      ...(throughput ? { throughput } : {}),
      restartFirstEditMs: restart.firstEditMs,
      restartPeakRssBytes: await peakRss(operator.process.pid),
      restartPushesBefore: restart.pushesBefore,
    };
  } finally {
    await operator.process.stop(30_000);
  }
}
