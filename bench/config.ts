// The benchmark's knobs, read from the environment so `make bench` runs with defaults and a
// quick check is `BENCH_SIZES=1000 make bench`.

export interface BenchConfig {
  /** How many ConfigMaps each snapshot measurement mirrors; one fresh namespace and repository each. */
  sizes: number[];
  /** Concurrent create requests while filling a namespace. */
  createBatch: number;
  /** Edits of the throughput phase (capped at 3 per ConfigMap, so every edit has its own key). */
  edits: number;
  writers: number;
  /** Edits per second offered by all writers together; 0 sends as fast as the writers can. */
  editRate: number;
  /** The GitTarget's commit window during the snapshot and throughput phases. */
  window: { idleTimeout: string; maxDuration: string };
  /** Edits of the latency phase, each sent once the previous one was pushed. */
  latencyEdits: number;
  /** (n): the namespaces each size's ConfigMaps are spread over, into one GitTarget; 0 or 1 skips it. */
  spreadNamespaces: number;
  /** Files elsewhere in phase (l)'s repository, on the first size; 0 skips the phase. */
  largeRepositoryFiles: number;
  /** Phase (w)'s offered rates, edits per second, on the first size; empty skips the phase. */
  writeRates: number[];
  /** How long (w) offers each rate. */
  writeSeconds: number;
  /** (s): edits sent before the leader is killed, each to its own ConfigMap; 0 skips the phase. */
  failoverEdits: number;
  /**
   * (r): repository branches, each mirrored from a namespace of `shardObjects` ConfigMaps, shared
   * out by `shardReplicas` replicas, compared with one; `shardEdits` edits round-robin over the
   * branches at `shardEditRate` per second (0 unpaced). 0 branches skips the phase.
   */
  shardBranches: number;
  shardObjects: number;
  shardReplicas: number;
  shardEdits: number;
  shardEditRate: number;
  /** Whether (w) runs each rate without the durable write queue, with it (on a real Redis), or both. */
  writeQueue: "off" | "on" | "both";
  /** (h): ConfigMaps in the folder each claim's applier applies (a WebhookClaim's, a FluxClaim's), and rounds; 0 rounds skips it. */
  claimObjects: number;
  claimRounds: number;
  /** Runs of the native git reference per size; the median is reported. */
  referenceRepeats: number;
  /** Upper bounds, so every wait in the run ends. */
  snapshotTimeoutMs: number;
  settleTimeoutMs: number;
  editTimeoutMs: number;
  resultsDir: string;
}

function numberFrom(name: string, fallback: number): number {
  const text = process.env[name];
  if (text === undefined || text === "") return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a number >= 0, not "${text}"`);
  return value;
}

export function readConfig(): BenchConfig {
  const sizes = (process.env.BENCH_SIZES ?? "1000,10000")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "")
    .map(Number);
  if (sizes.length === 0 || sizes.some((n) => !Number.isInteger(n) || n < 1)) {
    throw new Error(
      `BENCH_SIZES must be a comma-separated list of positive integers, not "${process.env.BENCH_SIZES}"`,
    );
  }
  return {
    sizes,
    createBatch: numberFrom("BENCH_CREATE_BATCH", 50),
    edits: numberFrom("BENCH_EDITS", 2000),
    writers: Math.max(1, numberFrom("BENCH_WRITERS", 8)),
    editRate: numberFrom("BENCH_EDIT_RATE", 200),
    window: {
      idleTimeout: process.env.BENCH_EDIT_IDLE ?? "1s",
      maxDuration: process.env.BENCH_EDIT_MAX ?? "10s",
    },
    latencyEdits: numberFrom("BENCH_LATENCY_EDITS", 30),
    spreadNamespaces: Math.floor(numberFrom("BENCH_SPREAD_NAMESPACES", 100)),
    largeRepositoryFiles: numberFrom("BENCH_LARGE_REPOSITORY_FILES", 50_000),
    writeRates: (process.env.BENCH_WRITE_RATES ?? "500,1000,2000")
      .split(",")
      .filter((r) => r.trim() !== "")
      .map(Number)
      .filter((r) => r > 0),
    writeSeconds: numberFrom("BENCH_WRITE_SECONDS", 30),
    writeQueue: queueModeFrom(process.env.BENCH_WRITE_QUEUE ?? "both"),
    failoverEdits: numberFrom("BENCH_FAILOVER_EDITS", 200),
    shardBranches: Math.floor(numberFrom("BENCH_SHARD_BRANCHES", 30)),
    shardObjects: Math.max(1, Math.floor(numberFrom("BENCH_SHARD_OBJECTS", 1000))),
    shardReplicas: Math.max(2, Math.floor(numberFrom("BENCH_SHARD_REPLICAS", 3))),
    shardEdits: Math.floor(numberFrom("BENCH_SHARD_EDITS", 3000)),
    shardEditRate: numberFrom("BENCH_SHARD_EDIT_RATE", 0),
    claimObjects: Math.max(2, numberFrom("BENCH_CLAIM_OBJECTS", 200)),
    claimRounds: numberFrom("BENCH_CLAIM_ROUNDS", 10),
    referenceRepeats: Math.max(1, numberFrom("BENCH_REFERENCE_REPEATS", 3)),
    snapshotTimeoutMs: numberFrom("BENCH_SNAPSHOT_TIMEOUT_S", 240) * 1000,
    settleTimeoutMs: numberFrom("BENCH_SETTLE_TIMEOUT_S", 180) * 1000,
    editTimeoutMs: numberFrom("BENCH_EDIT_TIMEOUT_S", 30) * 1000,
    resultsDir: process.env.BENCH_RESULTS_DIR ?? "bench-results",
  };
}

function queueModeFrom(value: string): BenchConfig["writeQueue"] {
  if (value === "off" || value === "on" || value === "both") return value;
  throw new Error(`BENCH_WRITE_QUEUE="${value}": use off, on or both`);
}
