// The operator's own instruments. Each is created unregistered, and registerInstruments puts
// them on the process registry, so a test can build its own registry without duplicates.
import { Counter, Gauge, Histogram, type Metric, type Registry } from "prom-client";
import { metricPrefix } from "./metrics.ts";

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

const branchLabels = ["gitbranch_namespace", "gitbranch_name"] as const;

/** Decided writes a branch holds until a push lands. */
export const retainedWrites = new Gauge({
  name: `${metricPrefix}git_retained_writes`,
  help: "Decided writes a branch worker retains until a push lands.",
  labelNames: branchLabels,
  registers: [],
});

/** What a branch holds accepted and unpublished, with the per-item charge: what the intake budget counts. */
export const retainedBytes = new Gauge({
  name: `${metricPrefix}git_retained_bytes`,
  help: "Bytes a branch worker holds accepted and unpublished, as the intake budget counts them.",
  labelNames: branchLabels,
  registers: [],
});

/** 1 while a branch's intake is paused: its budget is spent while a retry is pending. */
export const intakePaused = new Gauge({
  name: `${metricPrefix}git_intake_paused`,
  help: "1 while a branch's intake is paused because its budget is spent while it waits out an outage.",
  labelNames: branchLabels,
  registers: [],
});

/** When a failing branch tries its remote again; 0 while nothing is failing. */
export const nextRetry = new Gauge({
  name: `${metricPrefix}git_next_retry_timestamp_seconds`,
  help: "When a branch worker next tries a remote it could not reach, as Unix seconds; 0 while none is failing.",
  labelNames: branchLabels,
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

/** Operations past their budget and still followed: each holds its applier. */
export const applyOperationsUnresolved = new Gauge({
  name: `${metricPrefix}apply_operations_unresolved`,
  help: "Apply operations past their 5-minute budget and still followed, per claim.",
  labelNames: claimLabels,
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

/** Commit windows closed, by why: idle, max_duration, buffer_full, other_owner, resync, request, delivery, apply_due, shutdown. */
export const commitWindows = new Counter({
  name: `${metricPrefix}git_commit_windows_total`,
  help: "Commit windows closed, by close reason.",
  labelNames: ["gitbranch_namespace", "gitbranch_name", "close_reason"] as const,
  registers: [],
});

export function registerInstruments(registry: Registry): void {
  const metrics: Metric[] = [
    applyOwnershipConflicts,
    applyRequests,
    applyDuration,
    applyOperationsUnresolved,
    applyRevisionMismatches,
    applyEchoes,
    applyWindowCollisions,
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
  ];
  for (const metric of metrics) registry.registerMetric(metric);
}
