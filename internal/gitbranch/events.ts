// The Events a GitBranch's conditions make when they turn: its branch claimed or lost, its
// worker's publications failing (or its push-session proof refused) and landing again, and its
// durable write queue lost and kept again.
// GitTargets share the outage rule: every target on the branch reports the outage from the same
// worker report.
import { GitBranchCondition, GitBranchReason } from "../../generated/v1alpha3/index.ts";
import type { KnownCondition, TransitionRule } from "../operator/conditionevents.ts";

/**
 * The Ready reasons a worker's outage gives, on the GitBranch and on each GitTarget alike, and
 * the GitBranch's own push-session proof refused (a credential that no longer opens one).
 */
const outageReasons: readonly string[] = [
  GitBranchReason.RemoteUnreachable,
  GitBranchReason.LocalWriteFailed,
  GitBranchReason.ParentBranchNotFound,
  GitBranchReason.PushSessionFailed,
];

const inOutage = (c: KnownCondition | undefined) =>
  c !== undefined && c.status === "False" && outageReasons.includes(c.reason);

/**
 * A push failing: Warning with Ready's reason, once when the outage starts (and again if what
 * fails changes); PushRecovered once Ready is True again.
 */
export const outageRule: TransitionRule = {
  type: "Ready",
  decide(before, after) {
    if (inOutage(after) && (!inOutage(before) || before?.reason !== after.reason))
      return { type: "Warning", reason: after.reason, action: "Push", note: after.message };
    if (inOutage(before) && after.status === "True")
      return {
        type: "Normal",
        reason: "PushRecovered",
        action: "Push",
        note: `The branch's writes are published again after ${before!.reason}.`,
      };
    return undefined;
  },
};

/** BranchClaimed turning True (BranchClaimed) or from True to False (BranchLost). */
export const claimRule: TransitionRule = {
  type: GitBranchCondition.BranchClaimed,
  decide(before, after) {
    if (after.status === "True" && before?.status !== "True")
      return { type: "Normal", reason: "BranchClaimed", action: "Claim", note: after.message };
    if (after.status === "False" && before?.status === "True")
      return { type: "Warning", reason: "BranchLost", action: "Claim", note: after.message };
    return undefined;
  },
};

/**
 * DurableQueue turning False (Warning DurableQueueUnavailable: a crash now would lose authors)
 * and True again after it (DurableQueueRecovered); its first True is no news.
 */
export const durableQueueRule: TransitionRule = {
  type: GitBranchCondition.DurableQueue,
  decide(before, after) {
    if (after.status === "False" && before?.status !== "False")
      return { type: "Warning", reason: after.reason, action: "Queue", note: after.message };
    if (after.status === "True" && before?.status === "False")
      return {
        type: "Normal",
        reason: "DurableQueueRecovered",
        action: "Queue",
        note: "Redis keeps the branch's accepted writes again.",
      };
    return undefined;
  },
};

export const gitBranchEventRules: readonly TransitionRule[] = [claimRule, outageRule, durableQueueRule];
