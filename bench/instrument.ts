// Where a branch worker's time goes, measured from outside: the benchmark wraps, on the
// instances alone, the worker's publish() and its clone's methods as each worker is created.
// Nothing in the operator changes; the wrappers only time and count. publish() minus sync (fetch and reset),
// commit and push is materialize: the folder scan and the document edits.
import type { BranchWorker } from "../internal/git/worker/branchworker.ts";
import type { Clone } from "../internal/git/engine/clone.ts";
import type { WorkerManager } from "../internal/git/workermanager.ts";

export interface WorkerTimings {
  /** Publication cycles (publish() calls) and the time spent in them. */
  publishes: number;
  publishMs: number;
  /** clone.fetchAndReset(): fetch, then delete the worktree and check the tip out again. */
  syncs: number;
  syncMs: number;
  /** Of syncMs, the reset: removing every worktree file and checking the tip out again. */
  resets: number;
  resetMs: number;
  /**
   * Commits sent to the clone's git fast-import (clone.send()), and the time the worker waited
   * for their answers (clone.settle()): a commit is streamed while the next write is made, so
   * only what was not answered by then is waited for.
   */
  commits: number;
  commitMs: number;
  settles: number;
  pushes: number;
  pushMs: number;
  /** clone.list() calls (one per folder scan, so one per decided write) and clone.read() calls. */
  scans: number;
  reads: number;
  /** Calls still running when the phase ended: their time so far is in the totals, not their count. */
  running: string[];
  /** The highest RSS sampled while the worker was in each step (materialize: publish outside the others). */
  peakRssBytes: Partial<Record<Step, number>>;
}

export type Step = "sync" | "materialize" | "commit" | "push";

const zero = (): WorkerTimings => ({
  publishes: 0,
  publishMs: 0,
  syncs: 0,
  syncMs: 0,
  resets: 0,
  resetMs: 0,
  commits: 0,
  commitMs: 0,
  settles: 0,
  pushes: 0,
  pushMs: 0,
  scans: 0,
  reads: 0,
  running: [],
  peakRssBytes: {},
});

const counters = {
  publish: ["publishes", "publishMs"],
  fetchAndReset: ["syncs", "syncMs"],
  resetTo: ["resets", "resetMs"],
  settle: ["settles", "commitMs"],
  push: ["pushes", "pushMs"],
} as const;

type Methods = Record<string, (...args: unknown[]) => unknown>;

export class WorkerProbe {
  private totals = zero();
  private readonly instrumented = new WeakSet<object>();
  private readonly inFlight = new Set<{ method: keyof typeof counters; since: number }>();

  /** Wraps `workers.ensure`, so every worker it creates from now on is timed. */
  constructor(workers: WorkerManager) {
    const ensure = workers.ensure.bind(workers);
    workers.ensure = async (spec) => {
      const worker = await ensure(spec);
      this.instrument(worker);
      return worker;
    };
  }

  /** Attributes an RSS sample to the step the worker is in, if any. */
  observe(rss: number): void {
    const methods = new Set([...this.inFlight].map((call) => call.method));
    const steps: Step[] = (["sync", "commit", "push"] as const).filter((m) =>
      methods.has(m === "sync" ? "fetchAndReset" : m === "commit" ? "settle" : m),
    );
    if (steps.length === 0 && methods.has("publish")) steps.push("materialize");
    const peaks = this.totals.peakRssBytes;
    for (const step of steps) peaks[step] = Math.max(peaks[step] ?? 0, rss);
  }

  /** The totals since the last reset, and a fresh start. */
  take(): WorkerTimings {
    const totals = this.totals;
    this.totals = zero();
    const now = performance.now();
    for (const call of this.inFlight) {
      totals[counters[call.method][1]] += now - call.since;
      totals.running.push(call.method);
      call.since = now;
    }
    return totals;
  }

  private instrument(worker: BranchWorker): void {
    if (this.instrumented.has(worker)) return;
    this.instrumented.add(worker);
    // Private members, reached on purpose: this is a measurement harness.
    const inside = worker as unknown as { publish: () => Promise<void>; options: { clone: Clone } };
    const clone = inside.options.clone as unknown as Methods;
    this.time(inside as unknown as Methods, "publish");
    this.time(clone, "fetchAndReset");
    this.time(clone, "resetTo");
    // commit() is send() and settle(), which are counted.
    this.time(clone, "settle");
    this.time(clone, "push");
    for (const [method, counter] of [
      ["list", "scans"],
      ["read", "reads"],
      ["send", "commits"],
    ] as const) {
      if (typeof clone[method] !== "function") continue;
      const original = clone[method].bind(clone);
      clone[method] = (...args: unknown[]) => {
        this.totals[counter]++;
        return original(...args);
      };
    }
  }

  private time(target: Methods, method: keyof typeof counters): void {
    // A renamed private method leaves its counters at zero rather than failing the run.
    if (typeof target[method] !== "function") return;
    const original = target[method].bind(target);
    const [count, ms] = counters[method];
    target[method] = async (...args: unknown[]) => {
      const call = { method, since: performance.now() };
      this.inFlight.add(call);
      try {
        return await original(...args);
      } finally {
        this.inFlight.delete(call);
        this.totals[count]++;
        this.totals[ms] += performance.now() - call.since;
      }
    };
  }
}
