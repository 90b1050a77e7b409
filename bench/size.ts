// One size N: fill a fresh namespace, start a fresh operator on a fresh repository, measure the
// snapshot (and, for the first size, the live edits), stop the operator, then write the same
// files with native git for the reference.
import { rm } from "node:fs/promises";
import { join } from "node:path";
import type { KubeConfig } from "@kubernetes/client-node";
import type { GitServer } from "../test/support/gitserver.ts";
import { startOperator } from "../test/support/operator.ts";
import { eventually } from "../test/support/wait.ts";
import {
  applyMirror,
  configMapFolder,
  fillNamespace,
  renderFolder,
  retireMirror,
  setWindow,
  targetPath,
  targetReady,
} from "./cluster.ts";
import type { BenchConfig } from "./config.ts";
import type { Harness } from "./harness.ts";
import { measureLatency, measureThroughput } from "./edits.ts";
import { measureProcess } from "./process.ts";
import { measureFailover } from "./failover.ts";
import { measureShards } from "./shards.ts";
import { measureRestart } from "./restart.ts";
import { WorkerProbe } from "./instrument.ts";
import { PushLog } from "./pushlog.ts";
import { referenceWrite } from "./reference.ts";
import type { SizeResult } from "./report.ts";
import { sleep } from "../internal/timing/sleep.ts";
import { mib, progress, RssSampler, seconds } from "./sampler.ts";
import { waitForSnapshot } from "./snapshot.ts";
import { measureWriter } from "./writer.ts";
import { measureWriteSide, type WriteSideResult } from "./writeside.ts";
import { RedisConnection } from "../internal/redis/connection.ts";
import { RedisServer } from "../test/support/redis.ts";
import { quiet } from "../test/support/logger.ts";

/** Measures one size; returns false when its snapshot did not complete (larger sizes would not either). */
export async function measureSize(h: Harness, r: SizeResult, withEdits: boolean): Promise<boolean> {
  const { kc, git, user, config } = h;
  const { size, namespace } = r;
  const repository = `operator-${namespace}`;
  const folder = configMapFolder(namespace);
  progress(
    `N=${size}: creating namespace ${namespace} with ${size} ConfigMaps, ${config.createBatch} requests at a time`,
  );
  r.createMs = await fillNamespace(kc, namespace, size, config.createBatch);
  progress(`  created in ${seconds(r.createMs)} s`);

  // The reference first, while no operator is busy on the machine.
  progress(`(e) N=${size}: the same files with native git, one commit, one push`);
  const files = await renderFolder(kc, namespace);
  r.reference = await referenceWrite(git, `reference-${namespace}`, user, files, config.referenceRepeats);
  progress(
    `  ${files.size} files: ${r.reference.runs.map((run) => `${seconds(run.totalMs)} s`).join(", ")}; median ${seconds(r.reference.totalMs)} s`,
  );

  progress(`(p) N=${size}: the operator as its own process: the snapshot, then a restart and one edit`);
  r.process = await measureProcess(h, size, `${namespace}-p`, { withEdits });
  const p = r.process;
  progress(
    `  snapshot ${s(p.snapshotMs)}, VmHWM ${mib(p.snapshotPeakRssBytes ?? 0)} MiB; ${p.throughput ? `edits ${p.throughput.editsPerSecond.toFixed(1)}/s, p50 ${p.throughput.p50Ms} ms, VmHWM ${mib(p.throughput.peakRssBytes ?? 0)} MiB; ` : ""}after a restart the edit landed ${s(p.restartFirstEditMs)} after the start (${p.restartPushesBefore} push(es) before it), VmHWM ${mib(p.restartPeakRssBytes ?? 0)} MiB`,
  );

  if (config.spreadNamespaces > 1) {
    const spread = config.spreadNamespaces;
    progress(
      `(n) N=${size}: the operator as its own process, the ConfigMaps spread over ${spread} namespaces into one GitTarget`,
    );
    const n = await measureProcess(h, size, `${namespace}-n`, { spread });
    let spreadFiles: Map<string, string> | undefined;
    for (const source of n.sources) spreadFiles = await renderFolder(kc, source, spreadFiles);
    const reference = await referenceWrite(
      git,
      `reference-${namespace}-n`,
      user,
      spreadFiles!,
      config.referenceRepeats,
    );
    r.spread = { ...n, reference };
    progress(
      `  snapshot ${s(n.snapshotMs)}, VmHWM ${mib(n.snapshotPeakRssBytes ?? 0)} MiB; native git ${s(reference.totalMs)}; after a restart the edit landed ${s(n.restartFirstEditMs)} after the start (${n.restartPushesBefore} push(es) before it), VmHWM ${mib(n.restartPeakRssBytes ?? 0)} MiB`,
    );
  }

  if (withEdits && config.failoverEdits > 0) {
    progress(
      `(s) N=${size}: two operator processes, the branch's holder killed with SIGKILL after ${config.failoverEdits} edits`,
    );
    const f = (r.failover = await measureFailover(h, size, `${namespace}-s`));
    progress(
      `  the other replica held the branch ${s(f.takeoverMs)} after the kill; ${f.landed}/${f.edits} edits in Git, the last ${s(f.recoveredMs)} after the kill`,
    );
    progress(
      `(s) N=${size}: the same, the holder frozen with SIGSTOP instead, every value edited again, then the holder woken`,
    );
    const z = (r.freeze = await measureFailover(h, size, `${namespace}-z`, "freeze"));
    progress(
      `  held ${s(z.takeoverMs)} after the freeze; ${z.landed}/${z.edits} edits in Git, the last ${s(z.recoveredMs)} after it; after the wake ${z.woken?.regressed ?? "?"} value(s) went back, ${z.woken?.pushes ?? "?"} push(es)`,
    );
  }

  if (withEdits && config.shardBranches > 0) {
    progress(
      `(r) N=${size}: ${config.shardBranches} branches × ${config.shardObjects} ConfigMaps, one operator process, then ${config.shardReplicas} sharing them out`,
    );
    r.shards = await measureShards(h, `${namespace}-r`);
  }

  if (withEdits && config.largeRepositoryFiles > 0) {
    const otherFiles = config.largeRepositoryFiles;
    progress(`(l) N=${size}: the operator process again, in a repository with ${otherFiles} other files`);
    r.largeRepository = { ...(await measureProcess(h, size, `${namespace}-l`, { otherFiles })), otherFiles };
    const l = r.largeRepository;
    progress(
      `  snapshot ${s(l.snapshotMs)}, VmHWM ${mib(l.snapshotPeakRssBytes ?? 0)} MiB; restart edit ${s(l.restartFirstEditMs)}, VmHWM ${mib(l.restartPeakRssBytes ?? 0)} MiB`,
    );
  }

  const url = await git.createRepository(repository);
  const log = await PushLog.install(git, repository);
  await applyMirror(kc, namespace, url, user, config.window);

  const sampler = new RssSampler();
  const workerRoot = join(h.workerRoot, namespace);
  progress(`(a) N=${size}: starting the operator; waiting for ${size} files under ${folder}`);
  sampler.begin();
  const started = Date.now();
  const start = () => {
    const running = startOperator(kc, {
      inClusterKubeProviders: [`${namespace}/self`],
      workerRoot,
      pushCooldownMs: 0,
    });
    // Each error the operator logs, stamped with the seconds since the first one started.
    const record = running.errors.push.bind(running.errors);
    running.errors.push = (...lines: string[]) =>
      record(...lines.map((line) => `+${seconds(Date.now() - started)} s ${line}`));
    return running;
  };
  let operator = start();
  let probe = new WorkerProbe(operator.workers);
  sampler.onSample((rss) => probe.observe(rss));
  try {
    const snapshot = await waitForSnapshot({
      git,
      repository,
      folder,
      size,
      started,
      timeoutMs: config.snapshotTimeoutMs,
      log,
      workerRoot,
    });
    r.snapshot = { ...snapshot, peakRssBytes: sampler.end(), worker: probe.take() };
    if (snapshot.ms !== undefined) {
      r.contentMatches = await sameContent(git, repository, files);
      if (!r.contentMatches)
        progress("  warning: the operator's files differ from native git's (see the JSON)");
    }
    progress(
      snapshot.ms === undefined
        ? `  timed out after ${seconds(config.snapshotTimeoutMs)} s with ${snapshot.files}/${size} files`
        : `  ${size} files pushed ${seconds(snapshot.ms)} s after the operator started; peak RSS ${mib(r.snapshot.peakRssBytes)} MiB`,
    );
    if (snapshot.ms !== undefined) {
      progress(`(f) N=${size}: one edit committed into the ${size}-document folder, cold and warm inventory`);
      r.writer = await measureWriter(git, repository, user, namespace, size);
      progress(
        `  cold ${Math.round(r.writer.cold.ms)} ms (${r.writer.cold.parsed} files parsed), warm ${Math.round(r.writer.warm.ms)} ms (${r.writer.warm.parsed}), after a fetch ${Math.round(r.writer.afterFetch.ms)} ms (${r.writer.afterFetch.parsed})`,
      );
    }
    if (snapshot.ms === undefined) return false;
    if (!withEdits) await idleWindow(kc, namespace, config);
    else {
      progress(
        `(b) N=${size}: ${config.edits} edits from ${config.writers} writers at ${config.editRate || "unpaced"} edits/s`,
      );
      sampler.begin();
      const throughput = await measureThroughput({
        kc,
        git,
        repository,
        targets: [{ namespace, folder, branch: "main" }],
        size,
        edits: config.edits,
        writers: config.writers,
        rate: config.editRate,
        settleTimeoutMs: config.settleTimeoutMs,
        log,
      });
      r.throughput = { ...throughput, peakRssBytes: sampler.end(), worker: probe.take() };
      progress(
        `  ${throughput.landed}/${throughput.edits} edits pushed: ${throughput.editsPerSecond.toFixed(1)} edits/s`,
      );

      progress(`(c) N=${size}: idleTimeout 0s, then ${config.latencyEdits} single edits`);
      await idleWindow(kc, namespace, config);
      probe.take();
      sampler.begin();
      const latency = await measureLatency({
        kc,
        namespace,
        folder,
        size,
        edits: config.latencyEdits,
        editTimeoutMs: config.editTimeoutMs,
        log,
      });
      r.latency = { ...latency, peakRssBytes: sampler.end(), worker: probe.take() };
      progress(`  p50 ${latency.p50Ms} ms, p95 ${latency.p95Ms} ms`);
    }

    progress(`(g) N=${size}: a restart with Git matching live, one edit sent as it starts, idleTimeout 0s`);
    await operator.stop();
    sampler.begin();
    const restart = await measureRestart({
      kc,
      namespace,
      folder,
      log,
      timeoutMs: config.snapshotTimeoutMs,
      start: () => {
        operator = start();
        probe = new WorkerProbe(operator.workers);
        return operator;
      },
    });
    r.restart = { ...restart, peakRssBytes: sampler.end(), worker: probe.take() };
    progress(
      `  the edit landed ${s(restart.firstEditMs)} after the start, ${restart.pushesBefore} push(es) before it`,
    );
    if (withEdits) r.writeSide = await measureWriteSides(h, size);
  } finally {
    sampler.end();
    progress("  stopping the operator");
    // A worker finishes the publication it is in before it stops, and a commit cannot be
    // interrupted: after a timed-out snapshot it may run on for long, so wait only briefly.
    const patience = r.snapshot?.ms === undefined ? 10_000 : 60_000;
    const stopped = await Promise.race([operator.stop().then(() => true), sleep(patience).then(() => false)]);
    if (!stopped) {
      r.operatorStillRunning = true;
      progress(`  the operator did not stop within ${patience / 1000} s; it runs on until the process exits`);
    }
    r.operatorErrors = operator.errors.slice(0, 20);
    if (operator.errors.length > 0) progress(`  the operator logged ${operator.errors.length} error(s)`);
    await retireMirror(kc, namespace).catch((err: unknown) =>
      progress(`  retiring the mirror failed: ${String(err)}`),
    );
    // A clone still in use is left to the end of the run, which removes the whole worker root.
    if (stopped) await rm(workerRoot, { recursive: true, force: true });
  }
  return true;
}

/** Whether the operator's folder has the rendered files' paths, and a sample of them byte for byte. */
async function sameContent(git: GitServer, repository: string, files: Map<string, string>): Promise<boolean> {
  const paths = await git.listFiles(repository, "main", targetPath);
  if (paths.length !== files.size || paths.some((p) => !files.has(p))) return false;
  const sorted = [...files.keys()].sort();
  for (const path of [0, 0.25, 0.5, 0.75, 1].map((f) => sorted[Math.floor(f * (sorted.length - 1))]!)) {
    const pushed = await git.gitIn(repository, ["show", `main:${path}`]);
    if (pushed !== files.get(path)!.trim()) return false;
  }
  return true;
}

const s = (ms: number | undefined) => (ms === undefined ? "never" : `${seconds(ms)} s`);

/** Sets the GitTarget's idleTimeout to 0s, as (c) and (g) measure with, and waits for it to hold. */
async function idleWindow(kc: KubeConfig, namespace: string, config: BenchConfig): Promise<void> {
  const generation = await setWindow(kc, namespace, {
    idleTimeout: "0s",
    maxDuration: config.window.maxDuration,
  });
  await eventually(
    async () => {
      const state = await targetReady(kc, namespace);
      return state.ready && state.generation >= generation;
    },
    { timeoutMs: 60_000, description: "the GitTarget to observe idleTimeout 0s" },
  );
}

/** (w) at every rate, without the durable write queue, with it on a real Redis, or both. */
async function measureWriteSides(h: Harness, size: number): Promise<WriteSideResult[]> {
  const { config } = h;
  const modes = config.writeQueue === "both" ? [false, true] : [config.writeQueue === "on"];
  const redis = modes.includes(true) && config.writeRates.length > 0 ? await RedisServer.start() : undefined;
  const stop = new AbortController();
  const connection = redis && new RedisConnection(redis.address, quiet);
  const connected = connection?.start(stop.signal);
  const results: WriteSideResult[] = [];
  try {
    for (const queued of modes)
      for (const rate of config.writeRates) {
        const how = queued ? ", through the durable write queue" : "";
        progress(`(w) N=${size}: the write side alone, ${rate} edits/s for ${config.writeSeconds} s${how}`);
        const w = await measureWriteSide(h, size, rate, queued ? connection : undefined);
        results.push(w);
        progress(
          `  ${w.editsPerSecond?.toFixed(0) ?? "not settled"} edits/s; drained ${s(w.drainMs)} after the last send`,
        );
      }
  } finally {
    stop.abort();
    await connected;
    await redis?.stop();
  }
  return results;
}
