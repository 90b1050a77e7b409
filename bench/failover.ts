// (s) A failover: two operator processes, as the image runs them (dist/operator.mjs), with
// --replica-count=2 and Redis for the durable write queue, on a namespace of N ConfigMaps: one
// branch, which the first to start holds on its Lease. Once it has pushed the snapshot and the
// second is ready, BENCH_FAILOVER_EDITS edits are sent, each to its own ConfigMap, and the holder
// is killed with SIGKILL a second after the last was answered, while the push cooldown still
// holds some of them. Measured: from the kill to the other holding the branch's Lease, and to the
// push that landed the last edit. With `freeze`, the holder is stopped with SIGSTOP instead (a
// paused VM, a stalled node): once the other has taken over and landed the edits, each of them
// is edited again and landed, and then the frozen holder wakes (SIGCONT) with its window and its
// durable queue as it left them; measured besides: how many values in Git went back to the
// older edit, and how many pushes landed in the two lease durations after the wake.
import { CoordinationV1Api, CoreV1Api } from "@kubernetes/client-node";
import { leaseKindLabel, shardAnnotation } from "../internal/operator/shardleases.ts";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { kustomizeBinary, repoRoot } from "../test/support/binaries.ts";
import { startOperatorProcess, type OperatorProcess } from "../test/support/operator.ts";
import { RedisServer } from "../test/support/redis.ts";
import { sleep } from "../internal/timing/sleep.ts";
import { defaultLeaseTimings } from "../internal/operator/leaderelection.ts";
import { applyMirror, configMapFolder, configMapName, fillNamespace } from "./cluster.ts";
import { PushLog } from "./pushlog.ts";
import type { Harness } from "./harness.ts";
import { waitForSnapshot } from "./snapshot.ts";

export interface FailoverResult {
  /** How the holder was stopped: SIGKILL, or SIGSTOP and woken later. */
  stop: "kill" | "freeze";
  edits: number;
  /** From the SIGKILL to the other replica holding the branch's Lease. */
  takeoverMs: number | undefined;
  /** From the SIGKILL to the push that landed the last of the edits. */
  recoveredMs: number | undefined;
  /** How many of the edits reached Git. */
  landed: number;
  /** With `freeze`, after the wake: values in Git back at the older edit, and pushes that landed. */
  woken?: { regressed: number; pushes: number };
}

const leaseNamespace = "default";

export async function measureFailover(
  h: Harness,
  size: number,
  namespace: string,
  stop: "kill" | "freeze" = "kill",
): Promise<FailoverResult> {
  const { kc, git, user, config } = h;
  const edits = Math.min(config.failoverEdits, size);
  await fillNamespace(kc, namespace, size, config.createBatch);
  const repository = `failover-${namespace}`;
  const folder = configMapFolder(namespace);
  const url = await git.createRepository(repository);
  const log = await PushLog.install(git, repository);
  await applyMirror(kc, namespace, url, user, { ...config.window, idleTimeout: "0s" });
  const redis = await RedisServer.start();
  const replicas: OperatorProcess[] = [];
  const start = async (name: string) => {
    const logDir = join(h.logDir, `failover-${name}`);
    await mkdir(logDir, { recursive: true });
    const replica = startOperatorProcess(
      h.kubeconfigPath,
      logDir,
      [
        `--in-cluster-kube-providers=${namespace}/self`,
        `--worker-root=${join(h.workerRoot, `failover-${namespace}-${name}`)}`,
        `--kustomize-path=${kustomizeBinary()}`,
        // info: the process says where it serves its probes (port 0, read back).
        "--log-level=info",
        "--leader-elect=true",
        `--leader-election-namespace=${leaseNamespace}`,
        "--replica-count=2",
        `--redis-addr=${redis.address}`,
      ],
      {},
      join(repoRoot, "dist/operator.mjs"),
    );
    replicas.push(replica);
    return replica;
  };
  try {
    const started = Date.now();
    const leader = await start("a");
    const snapshot = await waitForSnapshot({
      git,
      repository,
      folder,
      size,
      started,
      timeoutMs: config.snapshotTimeoutMs,
      log,
      workerRoot: join(h.workerRoot, `failover-${namespace}-a`),
    });
    if (snapshot.ms === undefined)
      return { stop, edits, takeoverMs: undefined, recoveredMs: undefined, landed: 0 };
    const second = await start("b");
    await untilReady(second, config.snapshotTimeoutMs);
    await log.skipExisting();
    const holder = await leaseHolder(h, repository);

    const tokens = await editEach(h, namespace, edits, "failover");
    await sleep(1_000);
    if (stop === "kill") await leader.process.kill();
    else process.kill(leader.process.pid, "SIGSTOP");
    const stoppedAt = Date.now();

    let takeoverMs: number | undefined;
    const deadline = stoppedAt + config.settleTimeoutMs;
    while (Date.now() < deadline) {
      const now = takeoverMs === undefined ? await leaseHolder(h, repository) : undefined;
      if (now !== undefined && now !== holder) takeoverMs = Date.now() - stoppedAt;
      await log.scan(folder);
      if (takeoverMs !== undefined && tokens.every((t) => log.landed.has(t))) break;
      await sleep(100);
    }
    const landed = tokens.filter((t) => log.landed.has(t)).length;
    const recoveredMs =
      landed === edits ? Math.max(...tokens.map((t) => log.landed.get(t)!)) - stoppedAt : undefined;
    const result: FailoverResult = { stop, edits, takeoverMs, recoveredMs, landed };
    if (stop === "freeze") result.woken = await wake(h, leader, namespace, edits, repository, log);
    return result;
  } finally {
    for (const replica of replicas) {
      if (stop === "freeze" && replica.process.running) process.kill(replica.process.pid, "SIGCONT");
      await replica.process.stop(30_000);
    }
    await redis.stop();
  }
}

/** Edits the first `edits` ConfigMaps, each to a token of its own; returns the tokens. */
async function editEach(h: Harness, namespace: string, edits: number, prefix: string): Promise<string[]> {
  const core = h.kc.makeApiClient(CoreV1Api);
  const run = Date.now() % 1_000_000;
  const tokens = Array.from({ length: edits }, (_, i) => `${prefix}-${run}-${i}`);
  for (const [i, token] of tokens.entries())
    await core.patchNamespacedConfigMap({
      namespace,
      name: configMapName(i),
      body: [{ op: "replace", path: "/data/alpha", value: token }],
    });
  return tokens;
}

/**
 * The frozen holder's wake: every edited ConfigMap is edited again and the new holder lands it,
 * then the frozen one wakes with its window and queue as it left them. Counted two lease
 * durations later: values in Git that are not the newer edit, and pushes since the wake.
 */
async function wake(
  h: Harness,
  frozen: OperatorProcess,
  namespace: string,
  edits: number,
  repository: string,
  log: PushLog,
): Promise<{ regressed: number; pushes: number }> {
  const folder = configMapFolder(namespace);
  const newer = await editEach(h, namespace, edits, "newer");
  const deadline = Date.now() + h.config.settleTimeoutMs;
  while (Date.now() < deadline && !newer.every((t) => log.landed.has(t))) {
    await log.scan(folder);
    await sleep(100);
  }
  const pushesBefore = (await log.pushes()).length;
  process.kill(frozen.process.pid, "SIGCONT");
  // Two shipped lease durations: the woken holder has noticed its loss long before.
  await sleep(2 * defaultLeaseTimings.leaseDurationMs);
  const values = await h.git.gitIn(repository, [
    "grep",
    "-h",
    "-o",
    "-e",
    "newer-[0-9]*-[0-9]*",
    "main",
    "--",
    folder,
  ]);
  const inGit = new Set(values.split("\n").map((line) => line.trim()));
  return {
    regressed: newer.filter((t) => !inGit.has(t)).length,
    pushes: (await log.pushes()).length - pushesBefore,
  };
}

/** The holder of the branch's Lease: the one shard Lease of the repository the phase writes. */
async function leaseHolder(h: Harness, repository: string): Promise<string | undefined> {
  const leases = await h.kc
    .makeApiClient(CoordinationV1Api)
    .listNamespacedLease({ namespace: leaseNamespace, labelSelector: `${leaseKindLabel}=shard` })
    .catch(() => undefined);
  const lease = leases?.items.find((l) =>
    l.metadata?.annotations?.[shardAnnotation]?.includes(`/${repository}#`),
  );
  return lease?.spec?.holderIdentity || undefined;
}

/** Waits for the process's /readyz: its informers listed and Redis answered. */
async function untilReady(replica: OperatorProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const probePort = await replica.port("probes");
  while (Date.now() < deadline) {
    const answer = await fetch(`http://127.0.0.1:${probePort}/readyz`).catch(() => undefined);
    if (answer?.status === 200) return;
    await sleep(200);
  }
}
