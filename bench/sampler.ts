// The process's resident set size, sampled every 250 ms. The operator runs in the benchmark's
// own process, so this is the operator plus the harness (its client objects, its buffers).

export class RssSampler {
  private peak = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly listeners: ((rss: number) => void)[] = [];

  /** Calls `listener` with every sample. */
  onSample(listener: (rss: number) => void): void {
    this.listeners.push(listener);
  }

  /** Starts a fresh peak for a phase; runs a full GC first when node runs with --expose-gc. */
  begin(): void {
    this.end();
    (globalThis as { gc?: () => void }).gc?.();
    this.peak = process.memoryUsage().rss;
    this.timer = setInterval(() => {
      const rss = process.memoryUsage().rss;
      this.peak = Math.max(this.peak, rss);
      for (const listener of this.listeners) listener(rss);
    }, 250);
  }

  /** The phase's peak in bytes (one last sample included); stops sampling. */
  end(): number {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.peak = Math.max(this.peak, process.memoryUsage().rss);
    return this.peak;
  }

  get current(): number {
    return process.memoryUsage().rss;
  }
}

export const mib = (bytes: number) => Math.round(bytes / (1024 * 1024));

export const seconds = (ms: number) => Math.round(ms / 10) / 100;

const started = Date.now();

/** A progress line, prefixed with the time since the run started. */
export function progress(line: string): void {
  process.stdout.write(`[${String(seconds(Date.now() - started)).padStart(7)} s] ${line}\n`);
}

/** p in [0, 100] of `values` (nearest rank); undefined when empty. */
export function percentile(values: number[], p: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1];
}
