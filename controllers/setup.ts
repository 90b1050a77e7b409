// Wires every controller and runnable into a manager. main.ts and the end-to-end tests both
// call this, so the tests run the operator as it ships. The write side's parts are wired in
// writeside.ts; what the operator is started with, and what this hands back, is settings.ts.
import { RedisConnection } from "../internal/redis/connection.ts";
import { RedisCursorStore } from "../internal/redis/cursors.ts";
import { setupGitReceiverController } from "./gitreceiver.ts";
import type { Manager } from "../internal/operator/manager.ts";
import { RuleStore } from "../internal/rulestore/store.ts";
import { SourceContexts } from "../internal/watch/sourcecontexts.ts";
import { BranchClaims } from "../internal/gitbranch/branchclaim.ts";
import { RemoteStatusPublisher } from "../internal/gitbranch/remotestatus.ts";
import { setupAttribution } from "./attribution.ts";
import { setupScrapeGauges } from "./metrics.ts";
import { setupClusterWatchRuleController } from "./clusterwatchrule.ts";
import { setupGitBranchController } from "./gitbranch.ts";
import { setupGitProviderController } from "./gitprovider.ts";
import { setupGitTargetController } from "./gittarget.ts";
import { setupFluxClaimController } from "./fluxclaim.ts";
import { setupArgoCDClaimController } from "./argocdclaim.ts";
import { setupWebhookClaimController } from "./webhookclaim.ts";
import { Following } from "../internal/applier/claim/index.ts";
import { setupKubeProviderController } from "./kubeprovider.ts";
import { setupWatchRuleController } from "./watchrule.ts";
import { BranchShards } from "../internal/gitbranch/branchshards.ts";
import type { Operator, OperatorSettings } from "./settings.ts";
import { cursorFence, setupCommitRequests, setupPushReceiver, setupWorkers } from "./writeside.ts";

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
  setupWebhookClaimController(manager, following, {
    allowLoopbackHttp: settings.webhookClaimAllowLoopbackHttp ?? false,
    ...(shards ? { shardOf: shards.claim("WebhookClaim") } : {}),
    ...(recheckMs !== undefined ? { recheckMs } : {}),
  });
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
