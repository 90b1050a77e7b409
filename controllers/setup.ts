// Wires every controller and runnable into a manager. main.ts and the end-to-end tests both
// call this, so the tests run the operator as it ships.
import type { Attribution, AttributionSettings } from "../internal/attribution/attribution.ts";
import { RedisConnection, type RedisAccess } from "../internal/redis/connection.ts";
import { RedisCursorStore, type CursorFence } from "../internal/redis/cursors.ts";
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
import { setupGitReceiverController } from "./gitreceiver.ts";
import { informerSource } from "../internal/kube/sources.ts";
import type { Manager } from "../internal/operator/manager.ts";
import { RuleStore } from "../internal/rulestore/store.ts";
import { SourceContexts } from "../internal/watch/sourcecontexts.ts";
import { BranchClaims } from "../internal/gitbranch/branchclaim.ts";
import { RemoteStatusPublisher } from "../internal/gitbranch/remotestatus.ts";
import { WorkerManager, defaultWorkerRoot } from "../internal/git/index.ts";
import { branchTelemetry } from "../internal/telemetry/branchobserver.ts";
import { setupAttribution } from "./attribution.ts";
import { setupScrapeGauges } from "./metrics.ts";
import { setupClusterWatchRuleController } from "./clusterwatchrule.ts";
import { setupGitBranchController } from "./gitbranch.ts";
import { setupGitProviderController } from "./gitprovider.ts";
import { setupGitTargetController } from "./gittarget.ts";
import { setupFluxClaimController } from "./fluxclaim.ts";
import { setupArgoCDClaimController } from "./argocdclaim.ts";
import { setupApplies } from "./applies.ts";
import { Following } from "../internal/applier/claim/index.ts";
import { setupKubeProviderController } from "./kubeprovider.ts";
import { setupWatchRuleController } from "./watchrule.ts";
import { commitRequestCore, setupCommitRequestController } from "./commitrequest.ts";
import { CommitRequestServer } from "./commitrequestserver.ts";
import { keyOf, parseKey, refOf } from "../internal/types/names.ts";
import { BranchShards, commitRequestShard } from "../internal/gitbranch/branchshards.ts";

export interface OperatorSettings {
  inClusterKubeProviders: readonly string[];
  allowKubeconfigExec: boolean;
  allowKubeconfigInsecureTls: boolean;
  /** How often each source's discovery runs again; 30 s unless a test wants it sooner. */
  catalogRefreshMs?: number;
  /** Bytes one branch may hold accepted and unpublished (--branch-buffer-max-size). */
  branchBufferMaxSize?: number;
  /** resource.group types written only encrypted, besides core Secrets. */
  additionalSensitiveResources?: readonly string[];
  /** Where the branch workers keep their clones. */
  workerRoot?: string;
  /** --kustomize-path: renders kustomize folders to judge them; unset, folders are judged as written. */
  kustomizePath?: string;
  /** The pause between pushes of one branch, which batches bursts; 5 s. */
  pushCooldownMs?: number;
  /** How long the render gate holds live events before it gives up; 10 minutes. */
  renderHoldMs?: number;
  /** --git-refresh-interval: how often an idle branch proves where its remote is; 10 minutes. */
  gitRefreshInterval?: number;
  /** --author-attribution: the audit ingress, the fact transport and the grace. */
  attribution?: AttributionSettings;
  /** --redis-addr: resume cursors, and the redis fact transport; empty runs without Redis. */
  redisAddr?: string;
  /** --redis-username, --redis-password and the TLS files, as read. */
  redisAccess?: RedisAccess;
  /** --commit-request-retention: how long a finished CommitRequest is kept; 1 hour. */
  commitRequestRetention?: number;
  /** The margin past attachTimeout + maxDuration before an unheld CommitRequest is withdrawn; 120 s. */
  commitRequestWithdrawMarginMs?: number;
  /** How long an apply may run before it is Unresolved (suspended, and followed on); 5 minutes. */
  applyBudgetMs?: number;
  /** --applier-claim-recheck-interval: how often a Ready claim reads its applier again; 1 minute. */
  applierClaimRecheckInterval?: number;
  /** --receiver-bind-address: where the push receiver listens; empty or "0" serves none. */
  receiverBindAddress?: string;
  /** The process's leader Lease identity, which GitBranch status.heldBy names. */
  identity?: string;
}

const targetRef = parseKey;

export interface Operator {
  rules: RuleStore;
  sourceContexts: SourceContexts;
  /** Which GitBranch holds each repository branch; the branch workers will read it too. */
  claims: BranchClaims;
  workers: WorkerManager;
  /** With attribution on: the audit ingress and the fact index. */
  attribution?: Attribution;
  /** With --redis-addr: the connection, whose readiness gates the pod's. */
  redis?: RedisConnection;
  /** With --receiver-bind-address: the push receiver. */
  receiver?: PushReceiver;
}

export function setupOperator(manager: Manager, settings: OperatorSettings): Operator {
  const rules = new RuleStore();
  const redis = settings.redisAddr
    ? new RedisConnection(settings.redisAddr, manager.logger, settings.redisAccess)
    : undefined;
  if (redis) manager.addRunnable(redis);
  const attribution = settings.attribution && setupAttribution(manager, settings.attribution, redis);
  // With more than one replica, each holds its share of the repository branches.
  const shards = manager.sharded ? new BranchShards(manager) : undefined;
  const sourceContexts = new SourceContexts(
    rules,
    manager.logger,
    settings.catalogRefreshMs,
    attribution && ((route, collection) => attribution.attribute(route, collection)),
    redis && new RedisCursorStore(redis, manager.logger, cursorFence(manager, shards)),
  );
  manager.addRunnable(sourceContexts);
  const claims = new BranchClaims();
  const remoteStatus = new RemoteStatusPublisher(manager.kubeConfig, manager.logger);
  /** The apply operations this process follows: the dispatcher's, read by the FluxClaim reconciler. */
  const following = new Following();
  const workers = setupWorkers(manager, settings, { sourceContexts, following, remoteStatus, redis, shards });
  setupScrapeGauges(manager, sourceContexts, workers);
  const commitRequestServer = setupCommitRequests(manager, settings, workers, attribution, shards);
  const kubeProviders = setupKubeProviderController(manager, {
    sourceContexts,
    ...(attribution ? { lastFactAt: (route: string) => attribution.lastFactAt(route) } : {}),
    inClusterKubeProviders: settings.inClusterKubeProviders,
    kubeconfig: {
      allowExec: settings.allowKubeconfigExec,
      allowInsecure: settings.allowKubeconfigInsecureTls,
    },
    recheckMs: settings.catalogRefreshMs,
    commitRequests: commitRequestServer,
  });
  // A provider's status says once its CommitRequest watch holds its list.
  commitRequestServer.onServed((key) => kubeProviders.queue.add(key));
  const receiver = setupPushReceiver(manager, settings, workers, remoteStatus, redis);
  setupGitReceiverController(manager, receiver);
  setupGitProviderController(manager);
  setupGitBranchController(manager, {
    claims,
    onReconcileRequested: (key) => workers.refresh(key),
    workers,
    onReleased: (key) => remoteStatus.forget(key),
    ...(settings.identity ? { identity: settings.identity } : {}),
    ...(shards ? { shardOf: shards.branch } : {}),
  });
  const targets = setupGitTargetController(manager, sourceContexts, {
    claims,
    workers,
    ...(shards ? { shardOf: shards.target } : {}),
  });
  // A repository branch handed over: its GitTargets' watches stop first, leaving their cursors
  // to the replica that takes it, then its workers, each publishing what it holds; only then
  // does its Lease go.
  if (shards)
    manager.shareWork({
      wanted: () => shards.wanted(),
      handOver: async (shard) => {
        await Promise.all(shards.gitTargetsOf(shard).map((t) => targets.reconciler.disown(t)));
        await Promise.all(shards.gitBranchesOf(shard).map((key) => workers.release(key)));
      },
    });
  const recheckMs = settings.applierClaimRecheckInterval;
  setupFluxClaimController(manager, sourceContexts, following, shards?.claim("FluxClaim"), recheckMs);
  setupArgoCDClaimController(manager, sourceContexts, following, shards?.claim("ArgoCDClaim"), recheckMs);
  setupWatchRuleController(manager, rules, sourceContexts, shards?.target);
  setupClusterWatchRuleController(manager, rules, sourceContexts, shards?.target);
  return {
    rules,
    sourceContexts,
    claims,
    workers,
    ...(attribution ? { attribution } : {}),
    ...(redis ? { redis } : {}),
    ...(receiver ? { receiver } : {}),
  };
}

/**
 * The branch workers: each reports to its branch's metrics and logs (branchTelemetry), tells
 * the GitBranch's remote status what it pushed, proved or cannot reach, asks the watch side for
 * fresh snapshots, and with Redis keeps the writes it accepted in the branch's durable queue.
 */
function setupWorkers(
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
    applies: setupApplies(manager, sourceContexts, following, settings.applyBudgetMs),
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
    onBranchState: (branchKey, state) => remoteStatus.recordOutage(branchKey, state.outage),
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
function setupPushReceiver(
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
function setupCommitRequests(
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
function cursorFence(manager: Manager, shards: BranchShards | undefined): CursorFence {
  const targets = manager.informer<GitTarget>(informerSource(manager.kubeConfig, resourceTypes.GitTarget));
  return (targetUid) => {
    const target = targets.list().find((t) => t.metadata.uid === targetUid);
    if (!target) return { refused: "its GitTarget is gone" };
    const branchKey = keyOf(refOf(target.spec.gitBranchRef, target.metadata.namespace!));
    return { branchKey, token: manager.fenceToken(shards?.branchKey(branchKey)) };
  };
}
