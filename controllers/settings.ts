// What the operator is started with (cmd/flags.ts reads it from the flags; the end-to-end tests
// set it directly) and what setupOperator hands back: one home for both, so the entry point, the
// wiring and the tests agree on them.
import type { Attribution, AttributionSettings } from "../internal/attribution/attribution.ts";
import type { RedisAccess, RedisConnection } from "../internal/redis/connection.ts";
import type { PushReceiver } from "../internal/receiver/receiver.ts";
import type { RuleStore } from "../internal/rulestore/store.ts";
import type { SourceContexts } from "../internal/watch/sourcecontexts.ts";
import type { BranchClaims } from "../internal/gitbranch/branchclaim.ts";
import type { WorkerManager } from "../internal/git/index.ts";

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
  /** --webhook-claim-allow-loopback-http: a WebhookClaim may POST plain http to a loopback host. */
  webhookClaimAllowLoopbackHttp?: boolean;
  /** The process's leader Lease identity, which GitBranch status.heldBy names. */
  identity?: string;
}

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
