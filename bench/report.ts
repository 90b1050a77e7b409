// The run's results: the shape written to bench-results/<timestamp>.json, and the tables printed.
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { defaultLeaseTimings } from "../internal/operator/leaderelection.ts";
import type { BenchConfig } from "./config.ts";
import type { LatencyResult, ThroughputResult } from "./edits.ts";
import type { WorkerTimings } from "./instrument.ts";
import type { ReferenceResult } from "./reference.ts";
import type { ProcessResult } from "./process.ts";
import type { RestartResult } from "./restart.ts";
import { mib, seconds } from "./sampler.ts";
import type { SnapshotResult } from "./snapshot.ts";
import type { WriterResult, WriterStep } from "./writer.ts";
import type { WriteSideResult } from "./writeside.ts";
import type { FailoverResult } from "./failover.ts";
import { shareText, type ShardsResult } from "./shards.ts";
import type { ClaimResult } from "./claim.ts";

export interface Measured {
  peakRssBytes: number;
  worker: WorkerTimings;
}

export interface SizeResult {
  size: number;
  namespace: string;
  createMs: number;
  snapshot?: SnapshotResult & Measured;
  throughput?: ThroughputResult & Measured;
  latency?: LatencyResult & Measured;
  restart?: RestartResult & Measured;
  process?: ProcessResult;
  /** (n) the same as (p), the size's ConfigMaps spread over namespaces, with native git's write of the same files. */
  spread?: ProcessResult & { reference: ReferenceResult };
  /** (l) the same as (p), in a repository holding many other files; how many. */
  largeRepository?: ProcessResult & { otherFiles: number };
  reference?: ReferenceResult;
  writer?: WriterResult;
  /** (w) the write side alone, at each offered rate. */
  writeSide?: WriteSideResult[];
  /** (s) a failover between two replicas, on the first size: the holder killed, then frozen. */
  failover?: FailoverResult;
  freeze?: FailoverResult;
  /** (r) branches shared out by replicas, on the first size: one replica, then several. */
  shards?: ShardsResult;
  /** Whether sampled files the operator pushed equal the reference's, byte for byte. */
  contentMatches?: boolean;
  operatorErrors: string[];
  /** The operator did not stop when asked (a publication still running). */
  operatorStillRunning?: boolean;
  /** Why the size was not measured. */
  skipped?: string;
}

export interface RunResult {
  startedAt: string;
  durationMs: number;
  /** (h) a WebhookClaim with a real webhook applier, and a FluxClaim with the real Flux controllers, side by side. */
  claim?: ClaimResult;
  machine: { cpus: number; memoryGiB: number; node: string; git: string };
  config: BenchConfig;
  sizes: SizeResult[];
  notes: string[];
  error?: string;
}

const s = (ms: number | undefined) => (ms === undefined ? "—" : `${seconds(ms)} s`);
const ms = (value: number | undefined) => (value === undefined ? "—" : `${Math.round(value)} ms`);
const rss = (m: Measured | undefined) => (m ? `${mib(m.peakRssBytes)} MiB` : "");

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  return [line(header), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...rows.map(line)].join("\n");
}

export function resultTable(result: RunResult): string {
  const rows: string[][] = [];
  for (const r of result.sizes) {
    const n = String(r.size);
    if (r.skipped) rows.push(["(a) initial snapshot → pushed", n, "skipped", r.skipped, "", ""]);
    const ref = r.reference;
    if (r.snapshot) {
      const { ms: took, files, pushes, commits } = r.snapshot;
      const vsGit = took !== undefined && ref ? `${(took / ref.totalMs).toFixed(1)}× git` : "";
      const detail =
        took === undefined
          ? `timed out: ${files}/${r.size} files pushed, ${r.snapshot.cloneObjects} objects staged in the clone`
          : `${pushes} push(es), ${commits} commit(s)`;
      rows.push(["(a) initial snapshot → pushed", n, s(took), detail, rss(r.snapshot), vsGit]);
    }
    if (ref) {
      const detail = `clone ${ms(ref.cloneMs)}, write ${ms(ref.writeMs)}, add+commit ${ms(ref.addCommitMs)}, push ${ms(ref.pushMs)}`;
      const label =
        ref.runs.length > 1
          ? `(e) native git, 1 commit + 1 push, median of ${ref.runs.length}`
          : "(e) native git, 1 commit + 1 push";
      rows.push([label, n, s(ref.totalMs), detail, "", "1×"]);
    }
    const t = r.throughput;
    if (t) {
      const offered = t.offeredPerSecond === "unpaced" ? "unpaced" : `${t.offeredPerSecond}/s offered`;
      rows.push([
        `(b) edit throughput, ${t.writers} writers`,
        n,
        `${t.editsPerSecond.toFixed(1)} edits/s`,
        `${t.landed}/${t.edits} landed in ${s(t.spanMs)} (${offered}, sent in ${s(t.sendMs)}); ${t.pushes} pushes; edit→push p50 ${ms(t.p50Ms)}, p95 ${ms(t.p95Ms)}`,
        rss(t),
        "",
      ]);
    }
    const w = r.writer;
    if (w) {
      const step = (label: string, x: WriterStep) => `${label} ${ms(x.ms)} (${x.parsed} parsed)`;
      rows.push([
        "(f) one edit into the folder, writer + commit",
        n,
        ms(w.warm.ms),
        `${step("full rescan", w.cold)}; ${step("kept inventory", w.warm)}; ${step("after a fetch", w.afterFetch)}`,
        "",
        "",
      ]);
    }
    const f = r.failover;
    if (f) {
      rows.push([
        "(s) failover, branch holder killed",
        n,
        `taken in ${s(f.takeoverMs)}`,
        `${f.landed}/${f.edits} edits in Git, the last ${s(f.recoveredMs)} after the SIGKILL (a ${defaultLeaseTimings.leaseDurationMs / 1000} s Lease)`,
        "",
        "",
      ]);
    }
    const z = r.freeze;
    if (z) {
      rows.push([
        "(s) failover, branch holder frozen (SIGSTOP), then woken",
        n,
        `taken in ${s(z.takeoverMs)}`,
        `${z.landed}/${z.edits} edits in Git, the last ${s(z.recoveredMs)} after the SIGSTOP; after the wake, ${z.woken?.regressed ?? "?"} value(s) back at an older edit, ${z.woken?.pushes ?? "?"} push(es) in 30 s`,
        "",
        "",
      ]);
    }
    const sh = r.shards;
    for (const run of sh?.runs ?? []) {
      const t = run.throughput;
      const rssList = run.peakRssBytes.filter((b): b is number => b !== undefined);
      const sum = rssList.reduce((a, b) => a + b, 0);
      const shares = run.shares
        ? `; shares ${shareText(run.shares)}${run.even === false ? " (not even)" : ""}, settled ${s(run.balancedMs)}, ${run.handovers ?? 0} handover(s)`
        : "";
      rows.push([
        run.replicas === 1 ? "(r) one replica" : `(r) ${run.replicas} replicas`,
        `${sh!.branches}×${sh!.objects}`,
        t ? `${t.editsPerSecond.toFixed(1)} edits/s` : "—",
        `snapshot of ${run.branchesPushed}/${sh!.branches} branches ${s(run.snapshotMs)}` +
          (run.branchesMissing ? ` (none of ${run.branchesMissing.join(", ")})` : "") +
          (t
            ? `; ${t.landed}/${t.edits} landed (${t.offeredPerSecond === "unpaced" ? "unpaced" : `${t.offeredPerSecond}/s offered`}); ${t.pushes} pushes; p50 ${ms(t.p50Ms)}, p95 ${ms(t.p95Ms)}`
            : "") +
          (t?.unsettledBranches ? `; not landed on ${t.unsettledBranches.join(", ")}` : "") +
          shares +
          (run.errorLines > 0 ? `; ${run.errorLines} log line(s)` : ""),
        rssList.length === 0
          ? "—"
          : rssList.length === 1
            ? `${mib(rssList[0]!)} MiB`
            : `sum ${mib(sum)}, max ${mib(Math.max(...rssList))} MiB`,
        "",
      ]);
    }
    for (const w of r.writeSide ?? []) {
      rows.push([
        `(w) write side alone, ${w.offeredPerSecond}/s offered${w.durableQueue ? ", durable queue (Redis)" : ""}`,
        n,
        w.editsPerSecond === undefined ? "not settled" : `${w.editsPerSecond.toFixed(0)} edits/s`,
        `${w.sent} edits; the last value of every object pushed ${s(w.drainMs)} after the last send; ${w.pushes} pushes; at most ${w.maxBacklog} writes retained`,
        "",
        "",
      ]);
    }
    const l = r.latency;
    if (l) {
      rows.push([
        "(c) edit→push latency, idle 0s",
        n,
        `p50 ${ms(l.p50Ms)}`,
        `p95 ${ms(l.p95Ms)}, max ${ms(l.maxMs)}, ${l.landed}/${l.edits} edits`,
        rss(l),
        "",
      ]);
    }
    const peak = (bytes: number | undefined) => (bytes === undefined ? "—" : `${mib(bytes)} MiB`);
    const p = r.process;
    if (p) {
      rows.push([
        "(p) operator process: snapshot → pushed",
        n,
        s(p.snapshotMs),
        "its own process, 5 s push cooldown, idleTimeout 0s",
        peak(p.snapshotPeakRssBytes),
        p.snapshotMs !== undefined && ref ? `${(p.snapshotMs / ref.totalMs).toFixed(1)}× git` : "",
      ]);
      const t = p.throughput;
      if (t) {
        rows.push([
          `(p) operator process: edit throughput, ${t.writers} writers`,
          n,
          `${t.editsPerSecond.toFixed(1)} edits/s`,
          `${t.landed}/${t.edits} landed (${t.offeredPerSecond}/s offered); ${t.pushes} pushes; p50 ${ms(t.p50Ms)}, p95 ${ms(t.p95Ms)}`,
          peak(t.peakRssBytes),
          "",
        ]);
      }
      rows.push([
        "(p) operator process: restart → first edit pushed",
        n,
        s(p.restartFirstEditMs),
        `${p.restartPushesBefore} push(es) before the edit's`,
        peak(p.restartPeakRssBytes),
        "",
      ]);
    }
    const sp = r.spread;
    if (sp) {
      const over = `${sp.sources.length} namespaces, one GitTarget`;
      rows.push([
        "(n) operator process, spread: snapshot → pushed",
        n,
        s(sp.snapshotMs),
        `${over}; native git ${s(sp.reference.totalMs)} (write ${s(sp.reference.writeMs)}, add+commit ${s(sp.reference.addCommitMs)}, push ${s(sp.reference.pushMs)})`,
        peak(sp.snapshotPeakRssBytes),
        sp.snapshotMs !== undefined ? `${(sp.snapshotMs / sp.reference.totalMs).toFixed(1)}× git` : "",
      ]);
      rows.push([
        "(n) operator process, spread: restart → first edit pushed",
        n,
        s(sp.restartFirstEditMs),
        `${over}; ${sp.restartPushesBefore} push(es) before the edit's`,
        peak(sp.restartPeakRssBytes),
        "",
      ]);
    }
    const lr = r.largeRepository;
    if (lr) {
      const versus = (large: number | undefined, small: number | undefined) =>
        large !== undefined && small !== undefined ? `${((large / small - 1) * 100).toFixed(0)}% vs (p)` : "";
      rows.push([
        "(l) operator process, large repository: snapshot → pushed",
        n,
        s(lr.snapshotMs),
        `${lr.otherFiles} other files in the repository; RSS ${versus(lr.snapshotPeakRssBytes, p?.snapshotPeakRssBytes)}`,
        peak(lr.snapshotPeakRssBytes),
        versus(lr.snapshotMs, p?.snapshotMs),
      ]);
      rows.push([
        "(l) operator process, large repository: restart → first edit",
        n,
        s(lr.restartFirstEditMs),
        `${lr.restartPushesBefore} push(es) before the edit's`,
        peak(lr.restartPeakRssBytes),
        versus(lr.restartFirstEditMs, p?.restartFirstEditMs),
      ]);
    }
    const g = r.restart;
    if (g) {
      rows.push([
        "(g) restart, Git matching: start → first edit pushed",
        n,
        s(g.firstEditMs),
        `PATCH → push ${ms(g.editToPushMs)}; ${g.pushesBefore} push(es) before the edit's`,
        rss(g),
        "",
      ]);
    }
  }
  return table(["measurement", "N", "result", "detail", "peak RSS (d)", "vs git"], rows);
}

export function workerTable(result: RunResult): string {
  const rows: string[][] = [];
  for (const r of result.sizes) {
    for (const [phase, m] of [
      ["(a) snapshot", r.snapshot],
      ["(b) throughput", r.throughput],
      ["(c) latency", r.latency],
      ["(g) restart", r.restart],
    ] as const) {
      if (!m) continue;
      const w = m.worker;
      const materialize = w.publishMs - w.syncMs - w.commitMs - w.pushMs;
      const cycles = w.publishes + (w.running.includes("publish") ? 1 : 0);
      const per = (total: number) => (cycles > 0 ? ms(total / cycles) : "—");
      const running = w.running.length > 0 ? ` (still in ${w.running.join(", ")})` : "";
      rows.push([
        phase,
        String(r.size),
        `${w.publishes}${running}`,
        `${ms(w.syncMs)} (${per(w.syncMs - w.resetMs)} + ${per(w.resetMs)})`,
        `${ms(materialize)} (${per(materialize)})`,
        `${ms(w.commitMs)} (${per(w.commitMs)})`,
        `${ms(w.pushMs)} (${per(w.pushMs)})`,
        `${w.scans} / ${w.reads}`,
        (["sync", "materialize", "commit", "push"] as const)
          .map((step) => {
            const peak = w.peakRssBytes[step];
            return peak === undefined ? "—" : String(mib(peak));
          })
          .join(" / "),
      ]);
    }
  }
  return table(
    [
      "phase",
      "N",
      "publish cycles",
      "sync (per cycle: fetch + reset)",
      "materialize: scan+edit (per cycle)",
      "commit (per cycle)",
      "push (per cycle)",
      "folder scans / file reads",
      "peak RSS MiB in sync / materialize / commit / push",
    ],
    rows,
  );
}

export async function writeResult(dir: string, result: RunResult): Promise<string> {
  await mkdir(dir, { recursive: true });
  const file = join(dir, `${result.startedAt.replace(/[:.]/g, "-")}.json`);
  await writeFile(file, `${JSON.stringify(result, null, 2)}\n`);
  return file;
}
