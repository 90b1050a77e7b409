// The decisions of the GitBranch reconciler, as pure functions of what it read: whether its
// proof of a push session is still fresh, and what admission, that proof and the branch claim
// make of its conditions.
import { GitBranchCondition, GitBranchReason } from "../../generated/v1alpha3/index.ts";
import type { Candidate } from "../git/branchclaim.ts";
import { describeCheck, recheckOf, type CheckContext, type Recheck } from "../gitprovider/describe.ts";
import type { RemoteCheck } from "../gitprovider/remotecheck.ts";
import {
  progressingTrio,
  readyTrio,
  stalledTrio,
  type ConditionStatus,
  type ConditionUpdate,
} from "../operator/conditions.ts";
import type { Admission } from "./admission.ts";

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
      self: { uid: string; namespace: string };
      holder: Candidate | undefined;
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

  if (proved && holds) {
    const message = `Holds ${where}.`;
    return {
      conditions: [
        ...readyTrio(GitBranchReason.Succeeded, message, generation),
        validated,
        condition(GitBranchCondition.BranchClaimed, "True", GitBranchReason.Succeeded, message),
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
    recheck === "backoff"
      ? progressingTrio(reason, failure, generation)
      : stalledTrio(reason, failure, generation);
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

/** Names a holder in this GitBranch's namespace; one elsewhere stays anonymous, as another tenant's. */
function holderName(holder: Candidate, namespace: string): string {
  return holder.namespace === namespace ? `GitBranch ${holder.name}` : "A GitBranch in another namespace";
}
