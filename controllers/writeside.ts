// The write side's wiring, beside setupOperator: the branch workers with what they report to
// and their durable queues, the push receiver that wakes them, the CommitRequests that save
// through them, and how a GitTarget's resume cursors are fenced under its branch's epoch.
import type { Attribution } from "../internal/attribution/attribution.ts";
import type { RedisConnection } from "../internal/redis/connection.ts";
import type { CursorFence } from "../internal/redis/cursors.ts";
import { RedisWriteLog } from "../internal/redis/writelog.ts";
import { RedisNotices } from "../internal/redis/notices.ts";
import {
  resourceTypes,
  type CommitRequest,
  type GitBranch,
  type GitProvider,
  type GitTarget,
} from "../generated/v1alpha3/index.ts";
import { PushReceiver } from "../internal/receiver/receiver.ts";
import { branchesWoken } from "../internal/receiver/route.ts";
import { parseBindAddress } from "../internal/telemetry/servers.ts";
import { informerSource } from "../internal/kube/sources.ts";
import type { Manager } from "../internal/operator/manager.ts";
import type { SourceContexts } from "../internal/watch/sourcecontexts.ts";
import type { RemoteStatusPublisher } from "../internal/gitbranch/remotestatus.ts";
import { WorkerManager, defaultWorkerRoot } from "../internal/git/index.ts";
import { branchTelemetry } from "../internal/telemetry/branchobserver.ts";
import { setupApplies, webhookCallbacks } from "./applies.ts";
import type { Following } from "../internal/applier/claim/index.ts";
import { commitRequestCore, setupCommitRequestController } from "./commitrequest.ts";
import { CommitRequestServer } from "./commitrequestserver.ts";
import { keyOf, parseKey, refOf } from "../internal/types/names.ts";
import { commitRequestShard, type BranchShards } from "../internal/gitbranch/branchshards.ts";
import type { OperatorSettings } from "./settings.ts";

const targetRef = parseKey;

/**
 * The branch workers: each reports to its branch's metrics and logs (branchTelemetry), tells
 * the GitBranch's remote status what it pushed, proved or cannot reach, asks the watch side for
 * fresh snapshots, and with Redis keeps the writes it accepted in the branch's durable queue.
 */
export function setupWorkers(
  manager: Manager,
  settings: OperatorSettings,
  parts: {
    sourceContexts: SourceContexts;
    following: Following;
    remoteStatus: RemoteStatusPublisher;
    redis: RedisConnection | undefined;
    shards: BranchShards | undefined;
  },
): WorkerManager {
  const { sourceContexts, following, remoteStatus, redis, shards } = parts;
  const branches = manager.informer<GitBranch>(informerSource(manager.kubeConfig, resourceTypes.GitBranch));
  const workers = new WorkerManager({
    applies: setupApplies(manager, sourceContexts, following, {
      budgetMs: settings.applyBudgetMs,
      allowLoopbackHttp: settings.webhookClaimAllowLoopbackHttp ?? false,
    }),
    observer: (branchKey) => branchTelemetry(branchKey, manager.logger),
    // With Redis, each branch's accepted writes outlive the process: a crash replays them.
    ...(redis
      ? {
          writeLog: (branchKey: string) =>
            new RedisWriteLog(redis, branchKey, () => manager.fenceToken(shards?.branchKey(branchKey))),
        }
      : {}),
    onBranchPublished: (branchKey, commit) => remoteStatus.record(branchKey, commit, "Push"),
    onBranchProved: (branchKey, commit, by) => {
      if (commit) remoteStatus.record(branchKey, commit, by);
    },
    onBranchState: (branchKey, state) => {
      remoteStatus.recordOutage(branchKey, state.outage);
      if (state.reviewPush) remoteStatus.recordReview(branchKey, state.reviewPush);
    },
    refreshIntervalMs: settings.gitRefreshInterval,
    root: settings.workerRoot ?? defaultWorkerRoot,
    namedByGitBranch: (uid) => branches.list().some((b) => b.metadata.uid === uid),
    bufferLimitBytes: settings.branchBufferMaxSize ?? 8 * 1024 * 1024,
    pushCooldownMs: settings.pushCooldownMs,
    additionalSensitive: settings.additionalSensitiveResources ?? [],
    kustomizePath: settings.kustomizePath,
    folders: {
      onResyncRequested: (key, collections) => sourceContexts.resync(targetRef(key), collections),
    },
    renderHoldMs: settings.renderHoldMs,
    logger: manager.logger,
    ...(shards
      ? {
          holds: (branchKey: string) => manager.owns(shards.branchKey(branchKey)),
          mayPush: (branchKey: string) => manager.mayPush(shards.branchKey(branchKey)),
        }
      : {}),
  });
  manager.addRunnable(workers);
  return workers;
}

/** The push receiver, with --receiver-bind-address: a delivery wakes the workers its repository names. */
export function setupPushReceiver(
  manager: Manager,
  settings: OperatorSettings,
  workers: WorkerManager,
  remoteStatus: RemoteStatusPublisher,
  redis: RedisConnection | undefined,
): PushReceiver | undefined {
  const address = settings.receiverBindAddress ? parseBindAddress(settings.receiverBindAddress) : undefined;
  if (!address) return undefined;
  const providers = manager.informer<GitProvider>(
    informerSource(manager.kubeConfig, resourceTypes.GitProvider),
  );
  const branches = manager.informer<GitBranch>(informerSource(manager.kubeConfig, resourceTypes.GitBranch));
  // With Redis, a delivery to a replica without the branch's worker reaches the one with it.
  const wakeHere = (key: string) => {
    const woken = workers.notice(key);
    if (woken) remoteStatus.recordNotice(key);
    return woken;
  };
  const relay = redis && new RedisNotices(redis, wakeHere, manager.logger);
  if (relay) manager.addRunnable(relay);
  const receiver = new PushReceiver({
    ...address,
    logger: manager.logger,
    callbacks: webhookCallbacks(manager),
    route: ({ urls, branch }) => {
      for (const key of branchesWoken(urls, branch, providers.list(), branches.list()))
        if (!wakeHere(key)) void relay?.publish(key);
    },
  });
  manager.addRunnable(receiver);
  return receiver;
}

/**
 * CommitRequest: the control cluster's reconciler and the source clusters' server, on one core
 * that shares the branch workers and, with attribution on, the fact index.
 */
export function setupCommitRequests(
  manager: Manager,
  settings: OperatorSettings,
  workers: WorkerManager,
  attribution: Attribution | undefined,
  shards: BranchShards | undefined,
): CommitRequestServer {
  const core = commitRequestCore(manager, {
    saves: workers.saves,
    ...(attribution ? { creator: (route, request) => attribution.creator(route, request) } : {}),
    retentionMs: settings.commitRequestRetention ?? 60 * 60_000,
    withdrawMarginMs: settings.commitRequestWithdrawMarginMs,
  });
  const shardOf = shards && ((request: CommitRequest | undefined) => commitRequestShard(shards, request));
  setupCommitRequestController(manager, core, workers.saves, shardOf);
  const server = new CommitRequestServer(
    core,
    manager.logger,
    workers.saves,
    shardOf && { ownership: manager, shardOf },
  );
  manager.addRunnable(server);
  return server;
}

/**
 * How a GitTarget's resume cursors are fenced (internal/redis/cursors.ts): under its GitBranch's
 * epoch and this process's token for that branch, as the branch's durable queue is.
 */
export function cursorFence(manager: Manager, shards: BranchShards | undefined): CursorFence {
  const targets = manager.informer<GitTarget>(informerSource(manager.kubeConfig, resourceTypes.GitTarget));
  return (targetUid) => {
    const target = targets.list().find((t) => t.metadata.uid === targetUid);
    if (!target) return { refused: "its GitTarget is gone" };
    const branchKey = keyOf(refOf(target.spec.gitBranchRef, target.metadata.namespace!));
    return { branchKey, token: manager.fenceToken(shards?.branchKey(branchKey)) };
  };
}
