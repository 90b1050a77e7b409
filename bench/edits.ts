// The live-edit measurements. Every edit writes a unique token ("<phase>-<run>-<n>") into one
// key of one ConfigMap, and the push log says when the first push whose diff adds that token
// landed. Throughput edits never share a (ConfigMap, key), so each has its own final value.
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import type { GitServer } from "../test/support/gitserver.ts";
import { configMapName, dataKeys } from "./cluster.ts";
import type { PushLog } from "./pushlog.ts";
import { sleep } from "../internal/timing/sleep.ts";
import { percentile, progress } from "./sampler.ts";

const run = Date.now() % 1_000_000;

interface Edit {
  name: string;
  key: string;
  token: string;
}

async function patch(core: CoreV1Api, namespace: string, edit: Edit): Promise<void> {
  await core.patchNamespacedConfigMap({
    namespace,
    name: edit.name,
    body: [{ op: "replace", path: `/data/${edit.key}`, value: edit.token }],
  });
}

export interface ThroughputResult {
  edits: number;
  writers: number;
  offeredPerSecond: number | "unpaced";
  /** From the first PATCH sent to the last one answered. */
  sendMs: number;
  /** Edits whose value the settled remote holds. */
  landed: number;
  /** From the first PATCH sent to the push that landed the last edit. */
  spanMs: number;
  editsPerSecond: number;
  /** PATCH answered to pushed, per edit, under this load. */
  p50Ms: number | undefined;
  p95Ms: number | undefined;
  pushes: number;
  settled: boolean;
  /** With more than one target: the branches some of whose edits never landed. */
  unsettledBranches?: string[];
}

/** Where an edit stream goes: a namespace's ConfigMaps, mirrored into `folder` on `branch`. */
export interface EditTarget {
  namespace: string;
  folder: string;
  branch: string;
}

/**
 * Sends `edits` edits round-robin over the targets (one namespace for (b) and (p), one per
 * repository branch for (r)), from `writers` writers at `rate` per second, each to its own
 * (ConfigMap, key); then waits for the pushes that land them, all in one repository.
 */
export async function measureThroughput(options: {
  kc: KubeConfig;
  git: GitServer;
  repository: string;
  targets: readonly EditTarget[];
  /** ConfigMaps per target's namespace. */
  size: number;
  edits: number;
  writers: number;
  rate: number;
  settleTimeoutMs: number;
  log: PushLog;
}): Promise<ThroughputResult> {
  const { kc, git, repository, targets, size, writers, rate, log } = options;
  const core = kc.makeApiClient(CoreV1Api);
  const capacity = size * dataKeys.length * targets.length;
  const count = Math.min(options.edits, capacity);
  if (count < options.edits) progress(`  capped at ${count} edits: 3 keys per ConfigMap, one edit each`);
  // Edit j goes to target j mod T, as that target's edit k = j div T.
  const edits: (Edit & { namespace: string; branch: string })[] = Array.from({ length: count }, (_, j) => {
    const k = Math.floor(j / targets.length);
    const target = targets[j % targets.length]!;
    return {
      namespace: target.namespace,
      branch: target.branch,
      name: configMapName(k % size),
      key: dataKeys[Math.floor(k / size)]!,
      token: `tput-${run}-${j}`,
    };
  });
  const folders = [...new Set(targets.map((t) => t.folder))];
  const branches = [...new Set(targets.map((t) => t.branch))];
  await log.skipExisting();
  const pushesBefore = (await log.pushes()).length;
  const answered: number[] = new Array<number>(count).fill(0);
  const started = Date.now();
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      for (let j = w; j < count; j += writers) {
        if (rate > 0) {
          const due = started + (j * 1000) / rate;
          if (due > Date.now()) await sleep(due - Date.now());
        }
        await patch(core, edits[j]!.namespace, edits[j]!);
        answered[j] = Date.now();
      }
    }),
  );
  const sendMs = Date.now() - started;
  progress(`  sent ${count} edits in ${sendMs} ms; waiting for the remote to hold them`);

  const deadline = Date.now() + options.settleTimeoutMs;
  let lastReport = Date.now();
  for (;;) {
    await log.scan(folders);
    const landed = edits.filter((e) => log.landed.has(e.token)).length;
    if (landed === count || Date.now() > deadline) break;
    if (Date.now() - lastReport > 5_000) {
      lastReport = Date.now();
      progress(`  ${landed}/${count} edits pushed`);
    }
    await sleep(250);
  }
  // What the settled remote holds: tokens of this phase at the tips.
  const atTip = new Set(
    (
      await git
        .gitIn(repository, ["grep", "-h", "-o", "-E", `tput-${run}-[0-9]+`, ...branches, "--", ...folders])
        .catch(() => "")
    )
      .split("\n")
      .filter((t) => t !== ""),
  );
  const held = edits.filter((e) => atTip.has(e.token) && log.landed.has(e.token));
  const heldSet = new Set(held);
  const unsettled = [...new Set(edits.filter((e) => !heldSet.has(e)).map((e) => e.branch))].sort();
  const lastLanded = Math.max(started, ...held.map((e) => log.landed.get(e.token)!));
  const latencies = edits
    .map((e, j) => (log.landed.get(e.token) ?? NaN) - answered[j]!)
    .filter((ms) => Number.isFinite(ms));
  const spanMs = lastLanded - started;
  return {
    edits: count,
    writers,
    offeredPerSecond: rate > 0 ? rate : "unpaced",
    sendMs,
    landed: held.length,
    spanMs,
    editsPerSecond: spanMs > 0 ? (held.length * 1000) / spanMs : 0,
    p50Ms: percentile(latencies, 50),
    p95Ms: percentile(latencies, 95),
    pushes: (await log.pushes()).length - pushesBefore,
    settled: held.length === count,
    ...(targets.length > 1 && unsettled.length > 0 ? { unsettledBranches: unsettled } : {}),
  };
}

export interface LatencyResult {
  edits: number;
  landed: number;
  samplesMs: number[];
  p50Ms: number | undefined;
  p95Ms: number | undefined;
  maxMs: number | undefined;
}

/** Single edits, each sent once the previous one was pushed: PATCH answered to push landed. */
export async function measureLatency(options: {
  kc: KubeConfig;
  namespace: string;
  folder: string;
  size: number;
  edits: number;
  editTimeoutMs: number;
  log: PushLog;
}): Promise<LatencyResult> {
  const { kc, namespace, folder, size, log } = options;
  const core = kc.makeApiClient(CoreV1Api);
  await log.skipExisting();
  const samples: number[] = [];
  // Edit 0 is a warm-up: it is sent and awaited, not counted.
  for (let i = 0; i <= options.edits; i++) {
    const edit = { name: configMapName((i * 37) % size), key: "gamma", token: `lat-${run}-${i}` };
    await patch(core, namespace, edit);
    const answered = Date.now();
    const deadline = answered + options.editTimeoutMs;
    while (!log.landed.has(edit.token) && Date.now() < deadline) {
      await sleep(20);
      await log.scan(folder);
    }
    const landedAt = log.landed.get(edit.token);
    if (landedAt === undefined) progress(`  edit ${i} not pushed within ${options.editTimeoutMs} ms`);
    else if (i > 0) samples.push(landedAt - answered);
    if (i > 0 && i % 10 === 0) progress(`  ${i}/${options.edits} single edits measured`);
  }
  return {
    edits: options.edits,
    landed: samples.length,
    samplesMs: samples,
    p50Ms: percentile(samples, 50),
    p95Ms: percentile(samples, 95),
    maxMs: samples.length > 0 ? Math.max(...samples) : undefined,
  };
}
