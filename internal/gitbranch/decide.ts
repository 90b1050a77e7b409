// The decisions of the GitBranch reconciler, as pure functions of what it read: whether its
// proof of a push session is still fresh, and what admission, that proof, the branch claim and
// its worker's report make of its conditions.
import { GitBranchCondition, GitBranchReason } from "../../generated/v1alpha3/index.ts";
import type { Candidate } from "./branchclaim.ts";
import {
  type BranchState,
  contentionFacts,
  contentionMessage,
  outageFacts,
  outageMessage,
} from "../git/index.ts";
import { describeCheck, recheckOf, type CheckContext, type Recheck } from "../gitprovider/describe.ts";
import type { RemoteCheck } from "../gitprovider/remotecheck.ts";
import {
  progressingTrio,
  readyTrio,
  retryingTrio,
  stalledTrio,
  type ConditionStatus,
  type ConditionUpdate,
} from "../operator/conditions.ts";
import type { Admission } from "./admission.ts";
import type { QueueState } from "../git/index.ts";

/** A push session this GitBranch proved, and what it was proved with. */
export interface Proof {
  /** The credential's fingerprint: the provider's spec and its Secret's version. */
  fingerprint: string;
  atMs: number;
}

/**
 * A proof is re-used for a steady interval while nothing it was proved with changed, so a
 * GitBranch that reconciles often (every GitTarget added or removed) opens at most one push
 * session per interval.
 */
export function proofIsFresh(
  proof: Proof | undefined,
  fingerprint: string,
  nowMs: number,
  steadyMs: number,
): boolean {
  return proof !== undefined && proof.fingerprint === fingerprint && nowMs - proof.atMs < steadyMs;
}

export type BranchFacts =
  | { stage: "rejected"; admission: Extract<Admission, { admitted: false }> }
  | {
      stage: "checked";
      admission: Extract<Admission, { admitted: true }>;
      check: RemoteCheck;
      context: Omit<CheckContext, "forPush">;
      /** The normalized repository URL and branch, as the claim keys them. */
      repository: string;
      branch: string;
      /** spec.parentBranch; undefined means the remote's default branch. */
      parentBranch?: string;
      self: { uid: string; namespace: string };
      holder: Candidate | undefined;
      /** What this GitBranch's branch worker last reported, while one runs. */
      worker?: BranchState;
    };

export interface BranchDecision {
  conditions: ConditionUpdate[];
  /** Undefined: nothing to look at again until a watched object changes. */
  recheck: Recheck | undefined;
}

export function decideBranch(facts: BranchFacts, generation: number | undefined): BranchDecision {
  const condition = (type: string, status: ConditionStatus, reason: string, message: string) => ({
    type,
    status,
    reason,
    message,
    observedGeneration: generation,
  });

  if (facts.stage === "rejected") {
    const { reason, message } = facts.admission;
    return {
      conditions: [
        ...stalledTrio(reason, message, generation),
        condition(GitBranchCondition.Validated, "False", reason, message),
        condition(GitBranchCondition.BranchClaimed, "False", reason, "Not a candidate: it is not admitted."),
      ],
      // GitProviders and Namespace labels are watched: a fix wakes this GitBranch.
      recheck: undefined,
    };
  }

  const { check, holder, self } = facts;
  const validated = condition(
    GitBranchCondition.Validated,
    "True",
    GitBranchReason.Succeeded,
    facts.admission.message,
  );
  const where = `branch "${facts.branch}" of ${facts.repository}`;
  const holds = holder?.uid === self.uid;
  const proved = check.kind === "answered";
  const recheck = recheckOf(check);

  // Only the holder has a worker; what its publications meet outranks the proof of a session.
  const worker = holds ? workerTrio(facts, generation) : undefined;

  if (proved && holds) {
    const message = `Holds ${where}.`;
    const queue = facts.worker?.durableQueue;
    return {
      conditions: [
        ...(worker ?? readyTrio(GitBranchReason.Succeeded, message, generation)),
        validated,
        condition(GitBranchCondition.BranchClaimed, "True", GitBranchReason.Succeeded, message),
        ...(queue ? [queueCondition(queue, generation)] : []),
      ],
      recheck,
    };
  }

  if (proved) {
    const name = holder ? holderName(holder, self.namespace) : "Another GitBranch";
    const message = `${name} holds ${where}: it is older, and one GitBranch writes a repository branch. This one takes the branch over if that one is deleted or no longer admitted.`;
    return {
      conditions: [
        ...stalledTrio(GitBranchReason.BranchConflict, message, generation),
        validated,
        condition(GitBranchCondition.BranchClaimed, "False", GitBranchReason.BranchConflict, message),
      ],
      recheck,
    };
  }

  const failure = describeCheck(check, { ...facts.context, forPush: true });
  const reason = GitBranchReason.PushSessionFailed;
  const trio =
    worker ??
    (recheck === "backoff"
      ? progressingTrio(reason, failure, generation)
      : stalledTrio(reason, failure, generation));
  // The holder keeps its branch through a failed proof (the branch claim's rule 3).
  const claimed = holds
    ? condition(
        GitBranchCondition.BranchClaimed,
        "True",
        GitBranchReason.Succeeded,
        `Holds ${where}, though its last push-session proof failed.`,
      )
    : condition(GitBranchCondition.BranchClaimed, "False", reason, `Not a candidate: ${failure}`);
  return { conditions: [...trio, validated, claimed], recheck };
}

/**
 * What of a worker's report the GitBranch's status reads, as a key: nothing of a backlog that
 * comes and goes with every push, so that wakes no GitBranch. Ready reads the outage and the
 * contention; DurableQueue whether the queue keeps writes.
 */
export function workerReadyKey(state: BranchState | undefined): string {
  const queue = state?.durableQueue;
  const kept = queue ? (queue.available ? "queue-kept" : "queue-unavailable") : "";
  return [readyKey(state), kept].filter(Boolean).join(" ");
}

function readyKey(state: BranchState | undefined): string {
  const outage = outageFacts(state);
  if (outage) return JSON.stringify([outage, state?.outage?.parentMissing === true]);
  const contention = contentionFacts(state);
  return contention ? JSON.stringify(contention) : "";
}

/**
 * The trio of a holder whose worker's publications fail, or undefined while they land. A missing
 * parent is Stalled=True, not Reconciling: the operator never creates a parent, so waiting alone
 * cannot end it, and only a person creating the branch on the remote can (kstatus: human-fixable
 * is Stalled). The worker's probes on its retry schedule notice that fix, as a GitTarget's
 * rechecks notice a folder fixed in Git, so the condition clears with no change to this object.
 * Any other failure ends by itself (the remote comes back, a reset clone is cloned afresh):
 * Reconciling, with the reason every GitTarget on the branch gives. A branch somebody else keeps
 * pushing to is no failure at all: work under way, RemoteMoving.
 */
function workerTrio(
  facts: Extract<BranchFacts, { stage: "checked" }>,
  generation: number | undefined,
): ConditionUpdate[] | undefined {
  const outage = outageFacts(facts.worker);
  const contention = contentionFacts(facts.worker);
  if (contention)
    return progressingTrio(GitBranchReason.RemoteMoving, contentionMessage(contention), generation);
  if (!outage) return undefined;
  if (!facts.worker?.outage?.parentMissing) {
    const reason =
      outage.fault === "local" ? GitBranchReason.LocalWriteFailed : GitBranchReason.RemoteUnreachable;
    return retryingTrio(reason, outageMessage(outage), generation);
  }
  const { branch, repository, parentBranch } = facts;
  const missing = parentBranch
    ? `its parent branch "${parentBranch}" (spec.parentBranch) does not exist either: create it on the remote, or recreate this GitBranch with another parent`
    : "the remote's default branch does not resolve to a commit: make the remote's HEAD name an existing branch, or set spec.parentBranch on a new GitBranch";
  const message =
    `Branch "${branch}" does not exist on ${repository}, and ${missing}. ` +
    `${outage.retainedWrites} decided write(s) are kept; the worker looks again on its retry schedule and publishes them once the parent exists.`;
  return stalledTrio(GitBranchReason.ParentBranchNotFound, message, generation);
}

/**
 * DurableQueue, while the holder's worker keeps a durable queue: Redis away is no failure of the
 * branch (it goes on from memory, and Ready says nothing of it), but what a crash would cost now.
 */
function queueCondition(queue: QueueState, generation: number | undefined): ConditionUpdate {
  const base = { type: GitBranchCondition.DurableQueue, observedGeneration: generation };
  if (queue.available)
    return {
      ...base,
      status: "True",
      reason: GitBranchReason.Succeeded,
      message:
        "Every live write the branch worker accepts is kept in Redis until a push lands it; a process that takes the branch over replays it with its author.",
    };
  return {
    ...base,
    status: "False",
    reason: GitBranchReason.DurableQueueUnavailable,
    message:
      `Redis has not taken the branch's accepted writes since ${queue.since.toISOString()}: ${queue.error}. ` +
      "The branch worker goes on from memory, so a crash until Redis answers again loses the authors of writes not yet pushed (the next snapshot brings their values back). Check that Redis at --redis-addr is up and reachable.",
  };
}

/** Names a holder in this GitBranch's namespace; one elsewhere stays anonymous, as another tenant's. */
function holderName(holder: Candidate, namespace: string): string {
  return holder.namespace === namespace ? `GitBranch ${holder.name}` : "A GitBranch in another namespace";
}
