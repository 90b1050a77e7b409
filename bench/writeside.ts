// (w) The write side alone: a BranchWorker fed a synthetic stream, with no API server in the
// way, so its own capacity shows. On 2 cores the API server takes edits from 8 writers at about
// 200/s, which bounds (b); here the items are made in the benchmark's process as the watch side
// would hand them over. A fresh repository per rate: a snapshot of N ConfigMaps first, then for
// BENCH_WRITE_SECONDS, live upserts at each rate of BENCH_WRITE_RATES, each a new value of one
// ConfigMap, round-robin, with the window of (b) and no push cooldown. A later value of an
// object replaces an earlier one in the same window (last write wins, by design), so an edit
// has reached Git when its object's last value has; the backlog is bounded when the remote holds
// every last value within a window's length of the last send. With the durable write queue on
// (a real redis-server), each upsert is appended to the branch's Redis Stream before the worker
// takes it, as a GitTarget's stream reader does, one after another: what the queue costs.
import { join } from "node:path";
import type { KubernetesObject } from "@kubernetes/client-node";
import { BranchWorker } from "../internal/git/worker/branchworker.ts";
import { Clone } from "../internal/git/engine/clone.ts";
import type { TargetSettings } from "../internal/git/folder/writes.ts";
import { kustomizationReferences } from "../internal/manifest/index.ts";
import { parseDuration } from "../internal/types/units.ts";
import { sleep } from "../internal/timing/sleep.ts";
import type { DesiredObject } from "../internal/stream/stream.ts";
import { configMapIdentity } from "../test/support/streams.ts";
import { configMapData, configMapName } from "./cluster.ts";
import { PushLog } from "./pushlog.ts";
import { progress } from "./sampler.ts";
import type { Harness } from "./harness.ts";
import { committing, unheardFolders } from "../test/support/worker.ts";
import { quiet } from "../test/support/logger.ts";
import type { RedisConnection } from "../internal/redis/connection.ts";
import { RedisWriteLog } from "../internal/redis/writelog.ts";

export interface WriteSideResult {
  offeredPerSecond: number;
  /** Each upsert went through the durable write queue in Redis. */
  durableQueue?: boolean;
  sent: number;
  /** From the first item enqueued to the push that landed the last object's last value. */
  spanMs: number | undefined;
  editsPerSecond: number | undefined;
  /** From the last item enqueued to that push: what was still held when sending stopped. */
  drainMs: number | undefined;
  pushes: number;
  maxBacklog: number;
}

const committer = { name: "GitOps Reverser", email: "noreply@configbutler.ai" };
const run = Date.now() % 1_000_000;
const namespace = "bench-w";
const collection = {
  key: `/configmaps@${namespace}?`,
  group: "",
  version: "v1",
  resource: "configmaps",
  kind: "ConfigMap",
  namespaced: true,
  namespace,
  labelSelector: "",
};

function configMap(i: number, data: Record<string, string>): DesiredObject {
  const name = configMapName(i);
  const identity = configMapIdentity(name, namespace);
  const object: KubernetesObject & { data: Record<string, string> } = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace },
    data,
  };
  return { identity, object };
}

export async function measureWriteSide(
  h: Harness,
  size: number,
  rate: number,
  /** Redis for the durable write queue; none: the worker keeps writes in memory only. */
  redis?: RedisConnection,
): Promise<WriteSideResult> {
  const { git, user, config } = h;
  const repository = `writeside-${size}-${rate}${redis ? "-queued" : ""}`;
  const url = await git.createRepository(repository);
  const log = await PushLog.install(git, repository);
  const target: TargetSettings = {
    key: `${namespace}/w`,
    path: "clusters/bench",
    timers: {
      idleTimeoutMs: parseDuration(config.window.idleTimeout),
      maxDurationMs: parseDuration(config.window.maxDuration),
    },
    prune: "OnEvent",
  };
  const worker = new BranchWorker({
    clone: new Clone({
      dir: join(h.workerRoot, repository),
      url,
      branch: "main",
      auth: user,
      buildsFrom: kustomizationReferences,
    }),
    committer,
    bufferLimitBytes: 8 * 1024 * 1024,
    pushCooldownMs: 0,
    materialize: committing(committer),
    folders: unheardFolders,
    logger: quiet,
    ...(redis
      ? { queue: { log: new RedisWriteLog(redis, `${namespace}/${repository}`, () => ({ token: "bench" })) } }
      : {}),
  });
  worker.start();
  try {
    const folder = `clusters/bench/${namespace}/configmaps`;
    worker.enqueue(target, { type: "replaying", collection });
    const objects = Array.from({ length: size }, (_, i) => configMap(i, configMapData(i)));
    worker.enqueue(target, { type: "snapshot", collection, objects });
    while ((await git.listFiles(repository, "main", folder).catch(() => [])).length < size) await sleep(200);
    await log.skipExisting();
    const pushesBefore = (await log.pushes()).length;

    const last = new Map<number, string>();
    let sent = 0;
    let maxBacklog = 0;
    const started = Date.now();
    const until = started + config.writeSeconds * 1000;
    while (Date.now() < until) {
      // Items due by now, at `rate` per second, enqueued as the watch side hands them over.
      for (const due = Math.floor(((Date.now() - started) * rate) / 1000); sent < due; sent++) {
        const i = sent % size;
        const token = `w-${run}-${sent}`;
        last.set(i, token);
        const item = {
          type: "upsert" as const,
          collection,
          ...configMap(i, { ...configMapData(i), alpha: token }),
        };
        if (redis) await worker.accept(target, item);
        else worker.enqueue(target, item);
      }
      maxBacklog = Math.max(maxBacklog, worker.backlog);
      await sleep(5);
    }
    const sentAt = Date.now();
    const deadline = sentAt + config.settleTimeoutMs;
    const finals = [...last.values()];
    while (Date.now() < deadline) {
      await log.scan(folder);
      if (finals.every((t) => log.landed.has(t))) break;
      maxBacklog = Math.max(maxBacklog, worker.backlog);
      await sleep(250);
    }
    const landedAt = finals.every((t) => log.landed.has(t))
      ? Math.max(...finals.map((t) => log.landed.get(t)!))
      : undefined;
    const spanMs = landedAt === undefined ? undefined : landedAt - started;
    return {
      offeredPerSecond: rate,
      ...(redis ? { durableQueue: true } : {}),
      sent,
      spanMs,
      editsPerSecond: spanMs ? (sent * 1000) / spanMs : undefined,
      drainMs: landedAt === undefined ? undefined : landedAt - sentAt,
      pushes: (await log.pushes()).length - pushesBefore,
      maxBacklog,
    };
  } finally {
    await worker.stop();
    progress(`  stopped the write-side worker at ${rate}/s`);
  }
}
