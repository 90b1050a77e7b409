// (r) Branches shared out by replicas: BENCH_SHARD_BRANCHES repository branches of one
// repository, each mirrored from a namespace of BENCH_SHARD_OBJECTS ConfigMaps, written first by
// one operator process, then by BENCH_SHARD_REPLICAS processes that share the branches out on
// shard Leases (each runs the watches and branch workers of the branches it holds). Each run has
// namespaces, a repository and a Redis of its own, with the same numbers of objects. Per run: from
// the first process's start to the push that completed the last branch's snapshot; with
// replicas, until every one holds its share; then an edit stream round-robin over the branches,
// its landed edits per second and edit→push latency; and each process's VmHWM.
import { CoordinationV1Api, type KubeConfig } from "@kubernetes/client-node";
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { gitBranches, gitProviders, kubeProviders } from "../generated/v1alpha3/index.ts";
import { providerRefOf } from "../internal/gitbranch/admission.ts";
import { branchKeyString } from "../internal/gitbranch/branchclaim.ts";
import { statusCodeOf } from "../internal/kube/resourceclient.ts";
import { leaseKindLabel, shardAnnotation } from "../internal/operator/shardleases.ts";
import { sleep } from "../internal/timing/sleep.ts";
import { normalizeRepositoryUrl } from "../internal/types/repourl.ts";
import { kustomizeBinary, repoRoot } from "../test/support/binaries.ts";
import { startOperatorProcess, type OperatorProcess } from "../test/support/operator.ts";
import { RedisServer } from "../test/support/redis.ts";
import { applyMirror, configMapFolder, fillNamespace, retireMirror } from "./cluster.ts";
import { measureThroughput, type EditTarget, type ThroughputResult } from "./edits.ts";
import { operatorEnvironment, peakRss } from "./process.ts";
import { PushLog } from "./pushlog.ts";
import { progress, seconds } from "./sampler.ts";
import type { Harness } from "./harness.ts";

/** One replica's share when the edits began or ended: the shards it held, the phase's branches among them. */
export interface ShardShare {
  identity: string;
  /** Every shard it held: the phase's branches and the GitBranches earlier phases left. */
  held: number;
  /** The phase's branches among them. */
  branches: number;
}

export interface ShardRun {
  replicas: number;
  /** The first process's start to the push that completed the last branch's snapshot. */
  snapshotMs: number | undefined;
  /** The same, to the first branch completed. */
  firstBranchMs: number | undefined;
  /** Branches whose snapshot was pushed, and those whose was not. */
  branchesPushed: number;
  branchesMissing?: string[];
  /**
   * With replicas: the first start to the shares settled, every shard held and none over its
   * fair share ceil(shards / replicas) (undefined: never).
   */
  balancedMs?: number | undefined;
  /** Whether each replica then held at least floor(shards / replicas) too. */
  even?: boolean;
  /** With replicas: the shares when the edits began, and when they had landed. */
  sharesBefore?: ShardShare[];
  shares?: ShardShare[];
  /** With replicas: how often the phase's shard Leases changed hands after they were first taken. */
  handovers?: number;
  /** The edit stream, round-robin over the branches; absent when the snapshot did not complete. */
  throughput?: ThroughputResult;
  /** Each process's VmHWM after the edit stream (or when the run ended without one). */
  peakRssBytes: (number | undefined)[];
  /**
   * Lines the processes logged until the measurement ended (at --log-level=error every one is an
   * error), and the first ten of each, shortened.
   */
  errorLines: number;
  errors: string[];
  /** Lines they logged while the mirrors were removed and they stopped. */
  teardownLines?: number;
}

export interface ShardsResult {
  branches: number;
  objects: number;
  runs: ShardRun[];
}

const leaseNamespace = "default";

const branchName = (i: number, branches: number) =>
  `b-${String(i).padStart(Math.max(2, String(branches - 1).length), "0")}`;

export async function measureShards(h: Harness, namespace: string): Promise<ShardsResult> {
  const { kc, config } = h;
  const branches = config.shardBranches;
  const objects = config.shardObjects;
  const runs = [
    { label: "a", replicas: 1 },
    { label: "b", replicas: config.shardReplicas },
  ];
  // Both runs' namespaces up front, so both see the same cluster.
  const namespaces = new Map(
    runs.map(({ label }) => [
      label,
      Array.from({ length: branches }, (_, i) => `${namespace}-r${label}-${branchName(i, branches)}`),
    ]),
  );
  progress(`  creating ${2 * branches} namespaces of ${objects} ConfigMaps each`);
  let createMs = 0;
  for (const list of namespaces.values())
    for (const ns of list) createMs += await fillNamespace(kc, ns, objects, config.createBatch);
  progress(`  created in ${seconds(createMs)} s`);
  const result: ShardsResult = { branches, objects, runs: [] };
  for (const { label, replicas } of runs) {
    progress(
      `  ${replicas === 1 ? "one replica" : `${replicas} replicas`}: ${branches} branches × ${objects}`,
    );
    const run = await measureRun(h, `shards-${namespace}-${label}`, namespaces.get(label)!, replicas);
    result.runs.push(run);
    const t = run.throughput;
    progress(
      `    snapshot of ${run.branchesPushed}/${branches} branches ${run.snapshotMs === undefined ? "never completed" : `in ${seconds(run.snapshotMs)} s`}` +
        (run.branchesMissing ? ` (none of ${run.branchesMissing.join(", ")})` : "") +
        (run.shares ? `; shares ${shareText(run.shares)}` : "") +
        (t
          ? `; ${t.landed}/${t.edits} edits, ${t.editsPerSecond.toFixed(1)} edits/s, p50 ${t.p50Ms} ms, p95 ${t.p95Ms} ms`
          : "") +
        (t?.unsettledBranches ? `; edits of ${t.unsettledBranches.join(", ")} never landed` : "") +
        (run.errorLines > 0 ? `; the processes logged ${run.errorLines} line(s)` : ""),
    );
  }
  return result;
}

/** The branches each replica held, "+k" where it held k shards of other phases' GitBranches too. */
export const shareText = (shares: ShardShare[]) =>
  shares
    .map((s) => (s.held === s.branches ? `${s.branches}` : `${s.branches}+${s.held - s.branches}`))
    .join("/");

async function measureRun(
  h: Harness,
  repository: string,
  namespaces: string[],
  replicas: number,
): Promise<ShardRun> {
  const { kc, git, user, config } = h;
  const branches = namespaces.length;
  const url = await git.createRepository(repository);
  // A new branch starts from the remote's default branch, which must have a commit.
  await git.pushForeignCommit(repository, {
    files: { "README.md": "Branches shared out by replicas.\n" },
    message: "Start",
  });
  const log = await PushLog.install(git, repository, { ref: /^refs\/heads\/b-/ });
  const targets: EditTarget[] = namespaces.map((namespace, i) => ({
    namespace,
    folder: configMapFolder(namespace),
    branch: branchName(i, branches),
  }));
  const window = { ...config.window, idleTimeout: "0s" };
  await Promise.all(targets.map((t) => applyMirror(kc, t.namespace, url, user, window, t.branch)));
  const ours = new Set(
    targets.map((t) => branchKeyString({ repository: normalizeRepositoryUrl(url), branch: t.branch })),
  );

  const redis = await RedisServer.start();
  const processes: OperatorProcess[] = [];
  const run: ShardRun = {
    replicas,
    snapshotMs: undefined,
    firstBranchMs: undefined,
    branchesPushed: 0,
    peakRssBytes: [],
    errorLines: 0,
    errors: [],
  };
  try {
    const started = Date.now();
    const shared = replicas > 1;
    for (let k = 0; k < replicas; k++) {
      const logDir = join(h.logDir, `${repository}-${k}`);
      await mkdir(logDir, { recursive: true });
      processes.push(
        startOperatorProcess(
          h.kubeconfigPath,
          logDir,
          [
            `--in-cluster-kube-providers=${namespaces.map((ns) => `${ns}/self`).join(",")}`,
            `--worker-root=${join(h.workerRoot, `${repository}-${k}`)}`,
            `--kustomize-path=${kustomizeBinary()}`,
            "--log-level=error",
            `--redis-addr=${redis.address}`,
            `--replica-count=${replicas}`,
            ...(shared ? ["--leader-elect=true", `--leader-election-namespace=${leaseNamespace}`] : []),
          ],
          operatorEnvironment(),
          join(repoRoot, "dist/operator.mjs"),
        ),
      );
    }
    const snapshot = await waitForBranches({
      h,
      repository,
      targets,
      objects: config.shardObjects,
      log,
      started,
      processes,
    });
    Object.assign(run, snapshot);
    if (shared) {
      const balance = await waitForBalance(kc, ours, replicas, started, config.snapshotTimeoutMs);
      run.balancedMs = balance.ms;
      run.even = balance.even;
      run.sharesBefore = balance.shares;
      progress(
        balance.ms === undefined
          ? `    the shares never settled: ${shareText(balance.shares)}`
          : `    the shares settled ${seconds(balance.ms)} s after the first start: ${shareText(balance.shares)}${balance.even ? "" : ", not even"}`,
      );
    }
    if (snapshot.snapshotMs !== undefined && config.shardEdits > 0) {
      progress(
        `    ${config.shardEdits} edits round-robin over ${branches} branches from ${config.writers} writers at ${config.shardEditRate || "unpaced"} edits/s`,
      );
      run.throughput = await measureThroughput({
        kc,
        git,
        repository,
        targets,
        size: config.shardObjects,
        edits: config.shardEdits,
        writers: config.writers,
        rate: config.shardEditRate,
        settleTimeoutMs: config.settleTimeoutMs,
        log,
      });
    }
    run.peakRssBytes = await Promise.all(processes.map((p) => peakRss(p.process.pid)));
    if (shared) {
      run.shares = (await shardShares(kc, ours)).shares;
      run.handovers = await handovers(kc, ours);
    }
  } finally {
    const measured = await Promise.all(processes.map((p) => logLines(p.logFile)));
    run.errorLines = measured.reduce((sum, lines) => sum + lines.length, 0);
    run.errors = measured.flatMap((lines) => lines.slice(0, 10).map(summary));
    progress(`    removing the mirrors, then stopping the process${replicas > 1 ? "es" : ""}`);
    // While the processes run: a GitBranch is deleted behind the finalizer they remove.
    await retireAll(kc, namespaces).catch((err: unknown) =>
      progress(`    removing the mirrors failed: ${String(err)}`),
    );
    await Promise.all(processes.map((p) => p.process.stop(30_000)));
    await redis.stop();
    const all = await Promise.all(processes.map((p) => logLines(p.logFile)));
    run.teardownLines = all.reduce((sum, lines) => sum + lines.length, 0) - run.errorLines;
  }
  return run;
}

/** The lines of a process's log. */
async function logLines(file: string): Promise<string[]> {
  return (await readFile(file, "utf8").catch(() => "")).split("\n").filter((line) => line.trim() !== "");
}

/** A log line, shortened: its time, message and fields, each field at most 200 characters. */
function summary(line: string): string {
  try {
    const { timestamp, level, message, ...fields } = JSON.parse(line) as Record<string, unknown>;
    const short = Object.entries(fields).map(
      ([k, v]) => `${k}=${String(typeof v === "string" ? v : JSON.stringify(v)).slice(0, 200)}`,
    );
    return [timestamp, level, message, ...short].map(String).join(" ");
  } catch {
    return line.slice(0, 600);
  }
}

/**
 * Waits until every branch's snapshot is pushed: for each push of a branch not complete yet,
 * the files its commit holds under the branch's folder are counted. Times are the pushes' own.
 */
async function waitForBranches(options: {
  h: Harness;
  repository: string;
  targets: EditTarget[];
  objects: number;
  log: PushLog;
  started: number;
  processes: OperatorProcess[];
}): Promise<Pick<ShardRun, "snapshotMs" | "firstBranchMs" | "branchesPushed" | "branchesMissing">> {
  const { h, repository, targets, objects, log, started, processes } = options;
  const byRef = new Map(targets.map((t) => [`refs/heads/${t.branch}`, t]));
  const done = new Map<string, number>();
  const deadline = started + h.config.snapshotTimeoutMs;
  let examined = 0;
  let lastReport = Date.now();
  while (done.size < targets.length && Date.now() < deadline) {
    for (const p of processes) p.process.assertRunning();
    const pushes = await log.pushes();
    for (; examined < pushes.length; examined++) {
      const push = pushes[examined]!;
      const target = byRef.get(push.ref);
      if (!target || done.has(target.branch) || /^0+$/.test(push.new)) continue;
      const listing = await h.git.gitIn(repository, [
        "ls-tree",
        "-r",
        "--name-only",
        push.new,
        "--",
        `${target.folder}/`,
      ]);
      if (listing.split("\n").filter((line) => line !== "").length >= objects)
        done.set(target.branch, push.at);
    }
    if (Date.now() - lastReport > 10_000) {
      lastReport = Date.now();
      progress(
        `    ${done.size}/${targets.length} branch snapshots pushed after ${Math.round((Date.now() - started) / 1000)} s`,
      );
    }
    await sleep(250);
  }
  const times = [...done.values()];
  return {
    snapshotMs: done.size === targets.length ? Math.max(...times) - started : undefined,
    firstBranchMs: times.length > 0 ? Math.min(...times) - started : undefined,
    branchesPushed: done.size,
    ...(done.size < targets.length
      ? { branchesMissing: targets.map((t) => t.branch).filter((b) => !done.has(b)) }
      : {}),
  };
}

/** Every repository branch a GitBranch in the cluster names, as the operator keys its shards. */
async function wantedShards(kc: KubeConfig): Promise<Set<string>> {
  const [branches, providers] = await Promise.all([gitBranches(kc).list(), gitProviders(kc).list()]);
  const urls = new Map(
    providers.items.map((p) => [`${p.metadata.namespace}/${p.metadata.name}`, p.spec.url]),
  );
  const wanted = new Set<string>();
  for (const branch of branches.items) {
    const ref = providerRefOf(branch);
    const url = urls.get(`${ref.namespace}/${ref.name}`);
    if (url !== undefined)
      wanted.add(branchKeyString({ repository: normalizeRepositoryUrl(url), branch: branch.spec.branch }));
  }
  return wanted;
}

async function shardLeases(kc: KubeConfig) {
  const list = await kc
    .makeApiClient(CoordinationV1Api)
    .listNamespacedLease({ namespace: leaseNamespace, labelSelector: `${leaseKindLabel}=shard` });
  return list.items;
}

/**
 * Who holds the shards now, from their Leases: every shard a GitBranch wants (the phase's and
 * those earlier phases left, which the replicas share out too), and how many of it are ours.
 */
async function shardShares(
  kc: KubeConfig,
  ours: Set<string>,
): Promise<{ wanted: number; unheld: number; shares: ShardShare[] }> {
  const [wanted, leases] = await Promise.all([wantedShards(kc), shardLeases(kc)]);
  const holderOf = new Map<string, string>();
  for (const lease of leases) {
    const shard = lease.metadata?.annotations?.[shardAnnotation];
    const holder = lease.spec?.holderIdentity ?? "";
    if (shard !== undefined && holder !== "") holderOf.set(shard, holder);
  }
  const shares = new Map<string, ShardShare>();
  let unheld = 0;
  for (const shard of wanted) {
    const identity = holderOf.get(shard);
    if (identity === undefined) {
      unheld++;
      continue;
    }
    const share = shares.get(identity) ?? { identity, held: 0, branches: 0 };
    share.held++;
    if (ours.has(shard)) share.branches++;
    shares.set(identity, share);
  }
  const sorted = [...shares.values()].sort((a, b) => b.held - a.held || a.identity.localeCompare(b.identity));
  return { wanted: wanted.size, unheld, shares: sorted };
}

/**
 * Waits until the shares settled as the replicas' own rules leave them: every wanted shard held,
 * every replica holding some and none more than its fair share, ceil(shards / replicas). Then no
 * replica takes or gives back any more; that does not make the shares even (7 shards on 3
 * replicas may settle at 3/3/1), so whether each also holds at least the floor is reported.
 */
async function waitForBalance(
  kc: KubeConfig,
  ours: Set<string>,
  replicas: number,
  started: number,
  timeoutMs: number,
): Promise<{ ms: number | undefined; even: boolean; shares: ShardShare[] }> {
  const deadline = Date.now() + timeoutMs;
  let shares: ShardShare[] = [];
  let lastReport = Date.now();
  while (Date.now() < deadline) {
    const now = await shardShares(kc, ours);
    shares = now.shares;
    const [low, high] = [Math.floor(now.wanted / replicas), Math.ceil(now.wanted / replicas)];
    if (now.unheld === 0 && shares.length === replicas && shares.every((s) => s.held <= high))
      return { ms: Date.now() - started, even: shares.every((s) => s.held >= low), shares };
    if (Date.now() - lastReport > 10_000) {
      lastReport = Date.now();
      progress(
        `    shares of ${now.wanted} shard(s) after ${Math.round((Date.now() - started) / 1000)} s: ${shares.map((s) => s.held).join("/")}, ${now.unheld} unheld`,
      );
    }
    await sleep(250);
  }
  return { ms: undefined, even: false, shares };
}

/** How often the phase's shard Leases changed hands after they were first taken. */
async function handovers(kc: KubeConfig, ours: Set<string>): Promise<number> {
  return (await shardLeases(kc))
    .filter((l) => ours.has(l.metadata?.annotations?.[shardAnnotation] ?? ""))
    .reduce((sum, l) => sum + (l.spec?.leaseTransitions ?? 0), 0);
}

/**
 * Removes the run's mirrors while its processes run (a GitBranch goes once they remove its
 * finalizer), so the next run's replicas share out only their own branches; a GitBranch still
 * there after two minutes loses its finalizer by hand.
 */
async function retireAll(kc: KubeConfig, namespaces: string[]): Promise<void> {
  const branches = gitBranches(kc);
  await Promise.all(namespaces.map((ns) => retireMirror(kc, ns)));
  await Promise.all(namespaces.map((ns) => branches.delete(ns, "main")));
  const deadline = Date.now() + 120_000;
  let left = namespaces;
  while (left.length > 0 && Date.now() < deadline) {
    await sleep(500);
    const present = await Promise.all(left.map((ns) => branches.get(ns, "main")));
    left = left.filter((_, i) => present[i] !== undefined);
  }
  if (left.length > 0)
    progress(`    ${left.length} GitBranch(es) still deleting after 120 s: finalizers removed`);
  for (const ns of left) {
    const branch = await branches.get(ns, "main");
    if (branch)
      await branches
        .jsonPatch(branch, [{ op: "remove", path: "/metadata/finalizers" }])
        .catch((err: unknown) => {
          if (statusCodeOf(err) !== 404) throw err;
        });
  }
  await Promise.all(
    namespaces.map(async (ns) => {
      await gitProviders(kc).delete(ns, "state");
      await kubeProviders(kc).delete(ns, "self");
    }),
  );
}
