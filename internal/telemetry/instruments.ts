// The operator's own instruments. Each is created unregistered, and registerInstruments puts
// them on the process registry, so a test can build its own registry without duplicates.
import { Counter, Gauge, Histogram, type Metric, type Registry } from "prom-client";
import { metricPrefix } from "./metrics.ts";

const branchLabels = ["gitbranch_namespace", "gitbranch_name"] as const;

/**
 * Resources the writer refused fail-safe instead of writing them unsafely, by reason and by
 * GitTarget (a configuration object, so a bounded label; the resource itself never is one).
 */
export const placementRefusals = new Counter({
  name: `${metricPrefix}placement_refusals_total`,
  help: "Resources the writer refused to write rather than write unsafely, such as a Secret while encryption is unavailable.",
  labelNames: ["reason", "gittarget_namespace", "gittarget_name"] as const,
  registers: [],
});

/**
 * Sensitive documents by what their encryption came to: encrypted (a SOPS document written),
 * unchanged (live proved equal to what the document holds, so nothing was encrypted), or failed
 * (a recipient age refuses: nothing written).
 */
export const secretEncryptions = new Counter({
  name: `${metricPrefix}secret_encryptions_total`,
  help: "Sensitive documents encrypted as SOPS documents, proved unchanged without encrypting, or refused because encryption failed.",
  labelNames: ["outcome", "gittarget_namespace", "gittarget_name"] as const,
  registers: [],
});

/**
 * New documents by the placement rung that chose their path, per GitTarget and type: a type
 * placed by the built-in path in a folder with its own layout names the spec.placement line it needs.
 */
export const placements = new Counter({
  name: `${metricPrefix}placements_total`,
  help: "New documents placed, by the rung of the placement ladder that chose the path.",
  labelNames: ["source", "gittarget_namespace", "gittarget_name", "group", "version", "resource"] as const,
  registers: [],
});

/** Writes and live events dropped instead of written, by why; nothing replays them. */
export const writesDropped = new Counter({
  name: `${metricPrefix}git_writes_dropped_total`,
  help: "Writes dropped instead of written: a render gate that diverged or gave up its hold, or a folder the acceptance gate refused.",
  labelNames: ["reason", "gittarget_namespace", "gittarget_name"] as const,
  registers: [],
});

/** Commits made, by who authored them: a person, a service account, or nobody resolved (none). */
export const gitCommits = new Counter({
  name: `${metricPrefix}git_commits_total`,
  help: "Commits made, by the kind of their author: user, serviceaccount, or none (the operator, or attribution unresolved).",
  labelNames: ["author_kind", "gittarget_namespace", "gittarget_name"] as const,
  registers: [],
});

/** Live changes attribution resolved, by the tier that answered and who it named. */
export const attributionResolutions = new Counter({
  name: `${metricPrefix}attribution_resolutions_total`,
  help: "Live changes attribution resolved, by the tier of the evidence (absent: none arrived in the grace) and the kind of actor it named.",
  labelNames: ["tier", "actor_kind"] as const,
  registers: [],
});

/** Requests the audit ingress answered, by HTTP code; a TLS handshake it refused is code "tls". */
export const auditRequests = new Counter({
  name: `${metricPrefix}audit_requests_total`,
  help: 'Requests the audit ingress answered, by HTTP status code; "tls" counts handshakes refused for a missing or foreign client certificate.',
  labelNames: ["code"] as const,
  registers: [],
});

/** Attribution facts the audit ingress accepted, by the audit route they came in on. */
export const auditFacts = new Counter({
  name: `${metricPrefix}audit_facts_total`,
  help: "Attribution facts the audit ingress accepted, by audit route: what passed its accept gate.",
  labelNames: ["audit_route"] as const,
  registers: [],
});

/** Watch connections of a collection, by how each began; a reinitialize costs a snapshot. */
export const watchSessions = new Counter({
  name: `${metricPrefix}watch_sessions_total`,
  help: "Watch connections by how they began: initial (the first after start, a snapshot), resume (a reconnect from the collection's cursor), reinitialize (a reconnect without a usable cursor, or after 410 Gone: a snapshot).",
  labelNames: ["start", "gittarget_namespace", "gittarget_name"] as const,
  registers: [],
});

/** Facts dropped because their write changed nothing: the version they name another write made. */
export const attributionNoops = new Counter({
  name: `${metricPrefix}attribution_noop_facts_total`,
  help: "Audit facts dropped as a no-op's, by audit route: a write that changed nothing is answered with the resourceVersion the last real write made, so it never takes that write's credit.",
  labelNames: ["audit_route"] as const,
  registers: [],
});

/** Dry-runs that prove which unowned values are server defaults, by outcome (sanitize/proof.ts). */
export const defaultsProofs = new Counter({
  name: `${metricPrefix}defaults_proofs_total`,
  help: "Server-side dry-runs that prove which values no field manager owns are the API server's defaults, by outcome: proven (the answer was compared), forbidden (the source credential may not create the kind: its defaults are written to Git, and it is asked again ten minutes later), refused (the dry-run was refused for this shape: its values are kept), failed (not answered; asked again).",
  labelNames: ["outcome"] as const,
  registers: [],
});

/** Appends to the fact stream, by outcome: a failed one answered kube-apiserver 503, which it retries. */
export const auditAppends = new Counter({
  name: `${metricPrefix}audit_appends_total`,
  help: "Appends of accepted facts to the fact stream, one per type per request, by outcome (ok, failed: the transport refused and the request was answered 503).",
  labelNames: ["transport", "outcome"] as const,
  registers: [],
});

/** Push deliveries by GitReceiver and outcome; an unknown path names no receiver and is not counted. */
export const receiverDeliveries = new Counter({
  name: `${metricPrefix}receiver_deliveries_total`,
  help: "Push webhook deliveries by GitReceiver and outcome: accepted (a push, routed), ignored (authenticated, not a branch push: a ping, a tag), unauthorized (a bad or missing signature or token), too_large, unreadable.",
  labelNames: ["receiver_namespace", "receiver_name", "outcome"] as const,
  registers: [],
});

/** Finished CommitRequests, by the reason their Ready condition gives. */
export const commitRequests = new Counter({
  name: `${metricPrefix}commit_requests_total`,
  help: "CommitRequests that finished, by outcome: Committed, AlreadyPresent, NoWindow, WindowMismatch, FinalizeFailed, GitTargetNotFound, NotAdmitted, AuthorUnresolved.",
  labelNames: ["outcome"] as const,
  registers: [],
});

/** Entries in the fact index, recorded when it changes. */
export const factIndexEntries = new Gauge({
  name: `${metricPrefix}attribution_fact_index_entries`,
  help: "Entries in the in-process fact index (one fact is filed under up to three keys), recorded when a fact is filed.",
  registers: [],
});

/** When the Redis fact follower last read its streams, in seconds since the epoch. */
export const followerLastSuccess = new Gauge({
  name: `${metricPrefix}attribution_follower_last_success_timestamp_seconds`,
  help: "When the fact follower last read the Redis fact streams successfully; time() minus this is how stale the index may be.",
  registers: [],
});

/** The fact transport this process runs, as a 1 on its label. */
export const attributionTransport = new Gauge({
  name: `${metricPrefix}attribution_transport`,
  help: "The attribution fact transport in use (redis or memory), as 1 on its label.",
  labelNames: ["transport"] as const,
  registers: [],
});

/**
 * Objects another applier applies (by Flux's owner labels or Argo CD's tracking annotation),
 * kept out of a folder a claim applies, each counted once per GitTarget: a misconfiguration to see.
 */
export const applyOwnershipConflicts = new Counter({
  name: `${metricPrefix}apply_ownership_conflicts_total`,
  help: "Objects another applier applies, kept out of a GitTarget's folder that an applier claim applies.",
  labelNames: ["gittarget_namespace", "gittarget_name"] as const,
  registers: [],
});

const claimLabels = ["claim_kind", "claim_namespace", "claim_name"] as const;

/**
 * Apply attempts a branch worker sent through an applier claim, by the reason the attempt
 * carried and how it ended (Succeeded, Failed, RequestFailed, Rejected, Dropped, Stale).
 */
export const applyRequests = new Counter({
  name: `${metricPrefix}apply_requests_total`,
  help: "Apply attempts a branch worker sent through an applier claim, by reason and by how each ended.",
  labelNames: [...claimLabels, "reason", "outcome"] as const,
  registers: [],
});

/** From the operation's record to its proved end, for attempts that started an apply. */
export const applyDuration = new Histogram({
  name: `${metricPrefix}apply_duration_seconds`,
  help: "Seconds from an apply operation's record on the claim to its proved end.",
  labelNames: [...claimLabels, "outcome"] as const,
  buckets: [0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600],
  registers: [],
});

/** Applied at the revision the source holds now, not the commit asked for: the residual race. */
export const applyRevisionMismatches = new Counter({
  name: `${metricPrefix}apply_revision_mismatches_total`,
  help: "Applies that ended Ready at the revision the source moved on to, not the commit asked for.",
  labelNames: claimLabels,
  registers: [],
});

/**
 * Live writes by an applier during or after an apply window: its echo, not mirrored, or a write
 * with no window open (an echo after the grace, or an apply somebody else started), mirrored.
 */
export const applyEchoes = new Counter({
  name: `${metricPrefix}apply_echoes_total`,
  help: "Live writes by an applier's field managers: not_mirrored (the apply's echo) or late (no window open).",
  labelNames: [...claimLabels, "outcome"] as const,
  registers: [],
});

/** An applier's write over an API edit in the window: withheld (a Repair made due) or ambiguous (mirrored). */
export const applyWindowCollisions = new Counter({
  name: `${metricPrefix}apply_window_collisions_total`,
  help: "An applier's write meeting an API edit in the apply window: withheld, or ambiguous (a tie, mirrored).",
  labelNames: [...claimLabels, "outcome"] as const,
  registers: [],
});

/** Objects whose pushed change a first snapshot wrote the live value over: an API edit and a Git commit met. */
export const pushedChangesOverridden = new Counter({
  name: `${metricPrefix}pushed_changes_overridden_total`,
  help: "Objects a commit pushed while the operator was down changed and that were also edited on the cluster: the first snapshot wrote the live value over the push (PushedChangeOverridden).",
  labelNames: claimLabels,
  registers: [],
});

/** Snapshots collected while Git was ahead of the cluster: discarded, or used once held 5 minutes. */
export const staleSnapshots = new Counter({
  name: `${metricPrefix}stale_snapshots_total`,
  help: "Snapshots of a folder an applier applies, collected while Git was ahead of the cluster or across an apply: discarded (a fresh one follows the apply), or used (held 5 minutes already).",
  labelNames: ["outcome", "gittarget_namespace", "gittarget_name"] as const,
  registers: [],
});

/** Commit windows closed, by why: idle, max_duration, buffer_full, other_owner, resync, request, delivery, apply_due, shutdown. */
export const commitWindows = new Counter({
  name: `${metricPrefix}git_commit_windows_total`,
  help: "Commit windows closed, by close reason.",
  labelNames: ["gitbranch_namespace", "gitbranch_name", "close_reason"] as const,
  registers: [],
});

const targetLabels = ["gittarget_namespace", "gittarget_name"] as const;

/**
 * Live watch events of a collection, by type and by what the watch made of them: routed (sent
 * to the GitTarget's stream), noop (its desired state did not change), ignored (another
 * controller's output, whose owner is what Git holds), excluded (a rule's exclusions kept it
 * out). A snapshot's objects are replays, not events.
 */
export const watchEvents = new Counter({
  name: `${metricPrefix}watch_events_total`,
  help: "Live watch events by GitTarget, type and event type, and what the watch made of each: routed, noop (desired state unchanged), ignored (controller-owned), excluded (a rule's exclusions).",
  labelNames: [...targetLabels, "group", "resource", "event_type", "outcome"] as const,
  registers: [],
});

/**
 * Live events and snapshot entries a rule's exclusions kept out, by why: field_manager (the
 * write's writer is in spec.excludeFieldManagers), user (its audit user is in excludeUsers),
 * object (the object matches excludeObjects).
 */
export const watchEventsExcluded = new Counter({
  name: `${metricPrefix}watch_events_excluded_total`,
  help: "Live events and snapshot entries kept out by a WatchRule's or ClusterWatchRule's exclusions, by reason: field_manager, user, object.",
  labelNames: [...targetLabels, "reason"] as const,
  registers: [],
});

/** Watch connections that ended, by why: the counterpart of watch_sessions_total's start. */
export const watchSessionEnds = new Counter({
  name: `${metricPrefix}watch_session_ends_total`,
  help: "Watch connections that ended, by reason: timeout (quiet, reconnects where it was), gone (410: history expired, a snapshot follows), error (retried with backoff), resync (a fresh snapshot was asked for), paused (the branch's intake is paused), stopped.",
  labelNames: [...targetLabels, "reason"] as const,
  registers: [],
});

/** Snapshots a collection completed, by how they were taken; their objects and time are the replay's cost. */
export const watchReplays = new Counter({
  name: `${metricPrefix}watch_replays_total`,
  help: "Snapshots completed, by mode: watchlist (sendInitialEvents up to the initial-events-end bookmark) or list (the LIST-and-watch compatibility path).",
  labelNames: [...targetLabels, "mode"] as const,
  registers: [],
});

/** Objects the completed snapshots carried: a replay's cost in objects. */
export const watchReplayObjects = new Counter({
  name: `${metricPrefix}watch_replay_objects_total`,
  help: "Objects the completed snapshots carried, per GitTarget.",
  labelNames: targetLabels,
  registers: [],
});

/** From a snapshot's connection to its last object: a replay's cost in time. */
export const watchReplayDuration = new Histogram({
  name: `${metricPrefix}watch_replay_duration_seconds`,
  help: "Seconds from a snapshot's connection to its completion (the initial-events-end bookmark, or the LIST answered).",
  labelNames: [...targetLabels, "mode"] as const,
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
  registers: [],
});

/**
 * Connections after one that ended on an error or 410, by how the collection recovered: resume
 * (from its cursor, losing nothing) or replay (a fresh snapshot, with mark-and-sweep).
 */
export const watchRecoveries = new Counter({
  name: `${metricPrefix}watch_recoveries_total`,
  help: "Recoveries after a watch connection ended on an error or 410 Gone, by mode: resume (from the stored cursor) or replay (a fresh snapshot).",
  labelNames: [...targetLabels, "mode"] as const,
  registers: [],
});

/** How long a live event kept its watch busy: from its arrival to its item in the stream, the author's wait included. */
export const watchEventHandling = new Histogram({
  name: `${metricPrefix}watch_event_handling_seconds`,
  help: "Seconds a live watch event kept its stream busy, from its arrival to its item on the GitTarget's stream (the attribution grace included): occupancy, not queue delay.",
  labelNames: targetLabels,
  buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2, 3, 5, 10],
  registers: [],
});

/** Discovery passes per source cluster, by outcome. */
export const apiCatalogRefreshes = new Counter({
  name: `${metricPrefix}api_catalog_refreshes_total`,
  help: "Discovery passes of a source cluster's API catalog, by outcome: changed (the served types changed and every GitTarget was planned again), unchanged, failed.",
  labelNames: ["source_cluster", "outcome"] as const,
  registers: [],
});

/** The types a source cluster serves, recorded at each discovery pass that completed. */
export const apiCatalogResources = new Gauge({
  name: `${metricPrefix}api_catalog_resources`,
  help: "Resource types (group, version, resource) the source cluster's discovery served at its last completed pass.",
  labelNames: ["source_cluster"] as const,
  registers: [],
});

/** How long discovery took, per source cluster. */
export const apiCatalogRefreshDuration = new Histogram({
  name: `${metricPrefix}api_catalog_refresh_duration_seconds`,
  help: "Seconds one discovery pass of a source cluster took.",
  labelNames: ["source_cluster"] as const,
  buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers: [],
});

/** Plan passes of a GitTarget's watches, by why they ran. */
export const watchPlanPasses = new Counter({
  name: `${metricPrefix}watch_plan_passes_total`,
  help: "Plan passes of a GitTarget's watches, by trigger: served (the target is newly served, or the manager started), rules (its rules changed), catalog (the served types changed).",
  labelNames: [...targetLabels, "trigger"] as const,
  registers: [],
});

/** What a plan pass changed: watches started, stopped, replaced (a new served version). */
export const watchPlanChanges = new Counter({
  name: `${metricPrefix}watch_plan_changes_total`,
  help: "Collection watches a plan pass changed, by action: started, stopped, replaced (the served version changed).",
  labelNames: [...targetLabels, "action"] as const,
  registers: [],
});

/** Commit or publication cycles that failed, by why; every write is kept and retried. */
export const gitCommitFailures = new Counter({
  name: `${metricPrefix}git_commit_failures_total`,
  help: "Publication cycles of a branch worker that failed, by reason: remote (the Git server could not be reached or refused), local (the clone was damaged and is cloned afresh), parent_missing (the parent branch a new branch starts from is missing), contended (the remote kept moving through every attempt). Every write is kept and retried.",
  labelNames: [...branchLabels, "reason"] as const,
  registers: [],
});

/** Documents a write decided, by what became of each in the folder, on its first commit only. */
export const gitDocuments = new Counter({
  name: `${metricPrefix}git_documents_total`,
  help: "Documents a decided write reached, by outcome on its first commit (a replay is not counted again): created, updated, deleted, unchanged (Git already held it), refused (written nowhere: see placement_refusals_total and the GitTarget's conditions).",
  labelNames: [...targetLabels, "outcome"] as const,
  registers: [],
});

/** Pushes of a branch worker, by outcome. */
export const gitPushes = new Counter({
  name: `${metricPrefix}git_pushes_total`,
  help: "Pushes by a branch worker, by outcome: landed, rejected (the remote moved: fetch, replay, push again), failed (not answered, or refused otherwise).",
  labelNames: [...branchLabels, "outcome"] as const,
  registers: [],
});

/** Live writes a branch worker kept in its durable queue before taking them, or could not. */
export const gitQueueAppends = new Counter({
  name: `${metricPrefix}git_queue_appends_total`,
  help: "Live writes appended to a branch's durable write queue (Redis) before the worker took them, by outcome: appended, failed (Redis away: the write goes on from memory).",
  labelNames: [...branchLabels, "outcome"] as const,
  registers: [],
});

/** Stream entries in Redis that carried no valid signature of the operator's key: dropped. */
export const redisEntriesRefused = new Counter({
  name: `${metricPrefix}redis_entries_refused_total`,
  help: "Entries read from Redis Streams without a valid signature of the operator's --redis-hmac-key, dropped and never used, by stream: writes (the durable write queue), facts (attribution). Nonzero means someone wrote to Redis who should not have, or the replicas' keys differ.",
  labelNames: ["stream"] as const,
  registers: [],
});

/** Entries a branch worker replayed from its durable queue: what a crash or a takeover left. */
export const gitQueueReplayed = new Counter({
  name: `${metricPrefix}git_queue_replayed_total`,
  help: "Accepted writes a branch worker replayed from its durable queue at start: what a crashed or replaced process had not pushed.",
  labelNames: branchLabels,
  registers: [],
});

/** Fetches of a branch worker, by outcome. */
export const gitFetches = new Counter({
  name: `${metricPrefix}git_fetches_total`,
  help: "Fetches (and resets onto the remote tip) by a branch worker, by outcome: ok, failed.",
  labelNames: [...branchLabels, "outcome"] as const,
  registers: [],
});

/**
 * Gauges read at scrape time: a work loop that is stuck must not be reported by its last healthy
 * moment. The process names what each reads once it has built it (readAtScrape).
 */
type Samples = Iterable<[labels: Record<string, string>, value: number]>;
const scrapeReaders = new Map<Gauge, () => Samples>();

function scrapeTimeGauge<T extends string>(name: string, help: string, labelNames: readonly T[]): Gauge<T> {
  return new Gauge({
    name: `${metricPrefix}${name}`,
    help,
    labelNames,
    registers: [],
    collect() {
      this.reset();
      const read = scrapeReaders.get(this);
      for (const [labels, value] of read?.() ?? []) this.set(labels as Partial<Record<T, string>>, value);
    },
  });
}

/** Names what a scrape-time gauge reports; the last process to name one is read (one per process). */
export function readAtScrape<T extends string>(gauge: Gauge<T>, read: () => Samples): void {
  scrapeReaders.set(gauge, read);
}

/** Decided writes a branch holds until a push lands. */
export const retainedWrites = scrapeTimeGauge(
  "git_retained_writes",
  "Decided writes a branch worker retains until a push lands.",
  branchLabels,
);

/** What a branch holds accepted and unpublished, with the per-item charge: what the intake budget counts. */
export const retainedBytes = scrapeTimeGauge(
  "git_retained_bytes",
  "Bytes a branch worker holds accepted and unpublished, as the intake budget counts them.",
  branchLabels,
);

/** 1 while a branch's intake is paused: its budget is spent while a retry is pending. */
export const intakePaused = scrapeTimeGauge(
  "git_intake_paused",
  "1 while a branch's intake is paused because its budget is spent while it waits out an outage.",
  branchLabels,
);

/** When a failing branch tries its remote again; 0 while nothing is failing. */
export const nextRetry = scrapeTimeGauge(
  "git_next_retry_timestamp_seconds",
  "When a branch worker next tries a remote it could not reach, as Unix seconds; 0 while none is failing.",
  branchLabels,
);

/** Operations past their budget and still followed, from each claim's status.operation: each holds its applier. */
export const applyOperationsUnresolved = scrapeTimeGauge(
  "apply_operations_unresolved",
  "1 while a claim's apply operation is past its 5-minute budget and still followed (status.operation.phase Unresolved), else 0.",
  claimLabels,
);

/** Which GitTargets each GitBranch's worker serves: the join between the two identities. */
export const gitBranchTargets = scrapeTimeGauge(
  "git_branch_targets",
  "1 for each GitTarget a GitBranch's worker serves: joins the gittarget_* families with the gitbranch_* ones.",
  [...branchLabels, ...targetLabels],
);

/** Collection watches open, per GitTarget and state. */
export const watchOpenStreams = scrapeTimeGauge(
  "watch_open_streams",
  "Collection watches running, per GitTarget and state: Replaying (a snapshot is being taken), Running, Blocked (the source refuses it).",
  [...targetLabels, "state"],
);

/** The (GVR, scope) collections a GitTarget's rules resolved to at its last plan pass. */
export const watchResolvedTypes = scrapeTimeGauge(
  "watch_resolved_types",
  "Collections (type and namespace scope) a GitTarget's rules resolved to at its last plan pass; unresolved counts the rule items that resolved to nothing.",
  [...targetLabels, "resolution"],
);

/**
 * The kstatus trio of every object a person declares, as 1 on the status each condition holds
 * (CommitRequests are requests, counted by commit_requests_total instead).
 */
export const resourceCondition = scrapeTimeGauge(
  "resource_condition",
  "1 on the status (True, False, Unknown) of each kstatus condition (Ready, Reconciling, Stalled) of every configuration object the operator reconciles, with its reason.",
  ["resource_kind", "resource_namespace", "resource_name", "condition", "status", "reason"],
);

export function registerInstruments(registry: Registry): void {
  const metrics: Metric[] = [
    applyOwnershipConflicts,
    applyRequests,
    applyDuration,
    applyOperationsUnresolved,
    applyRevisionMismatches,
    applyEchoes,
    applyWindowCollisions,
    staleSnapshots,
    pushedChangesOverridden,
    commitWindows,
    placementRefusals,
    secretEncryptions,
    gitCommits,
    attributionResolutions,
    auditRequests,
    auditFacts,
    auditAppends,
    factIndexEntries,
    followerLastSuccess,
    attributionTransport,
    watchSessions,
    attributionNoops,
    defaultsProofs,
    commitRequests,
    receiverDeliveries,
    placements,
    writesDropped,
    retainedWrites,
    retainedBytes,
    intakePaused,
    nextRetry,
    watchEvents,
    watchEventsExcluded,
    watchSessionEnds,
    watchReplays,
    watchReplayObjects,
    watchReplayDuration,
    watchRecoveries,
    watchEventHandling,
    apiCatalogRefreshes,
    apiCatalogResources,
    apiCatalogRefreshDuration,
    watchPlanPasses,
    watchPlanChanges,
    gitCommitFailures,
    gitDocuments,
    gitPushes,
    gitFetches,
    gitQueueAppends,
    gitQueueReplayed,
    redisEntriesRefused,
    gitBranchTargets,
    watchOpenStreams,
    watchResolvedTypes,
    resourceCondition,
  ];
  for (const metric of metrics) registry.registerMetric(metric);
}
