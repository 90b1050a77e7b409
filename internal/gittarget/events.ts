// The Events a GitTarget's conditions make when they turn: its folder refused and accepted
// again, sensitive resources refused for want of encryption and written again, and its branch's
// publications failing and landing again.
import { GitTargetCondition } from "../../generated/v1alpha3/index.ts";
import type { TransitionRule } from "../operator/conditionevents.ts";
import { outageRule } from "../gitbranch/events.ts";

/**
 * A condition that refuses (False) and accepts (True): a Warning with the condition's reason
 * when it turns False, and a Normal `accepted` reason when it turns True from False.
 */
function refusalRule(type: string, action: string, accepted: string, again: string): TransitionRule {
  return {
    type,
    decide(before, after) {
      if (after.status === "False" && before?.status !== "False")
        return { type: "Warning", reason: after.reason, action, note: after.message };
      if (after.status === "True" && before?.status === "False")
        return { type: "Normal", reason: accepted, action, note: `${again} ${after.message}` };
      return undefined;
    },
  };
}

export const gitTargetEventRules: readonly TransitionRule[] = [
  refusalRule(
    GitTargetCondition.GitPathAccepted,
    "Accept",
    "GitPathAccepted",
    "The folder is accepted again, after it was refused.",
  ),
  refusalRule(
    GitTargetCondition.EncryptionConfigured,
    "Encrypt",
    "EncryptionConfigured",
    "Sensitive resources are written again, encrypted.",
  ),
  outageRule,
];
