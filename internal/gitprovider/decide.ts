// The decisions of the GitProvider reconciler, as pure functions of what it read: what the
// credential check found becomes Validated, Reachable and the kstatus trio.
import { GitProviderCondition, GitProviderReason } from "../../generated/v1alpha3/index.ts";
import {
  progressingTrio,
  readyTrio,
  stalledTrio,
  type ConditionStatus,
  type ConditionUpdate,
} from "../operator/conditions.ts";
import { describeCheck, recheckOf, type CheckContext, type Recheck } from "./describe.ts";
import type { RemoteCheck } from "./remotecheck.ts";

export interface ProviderDecision {
  conditions: ConditionUpdate[];
  /** The repository answered: status.lastVerifiedAt moves to now. */
  verified: boolean;
  recheck: Recheck;
}

/** The reason a check's outcome is reported under. */
export function providerReason(check: RemoteCheck): string {
  switch (check.kind) {
    case "answered":
      return GitProviderReason.Succeeded;
    case "secretNotFound":
      return GitProviderReason.SecretNotFound;
    case "credentialUnreadable":
    case "refused":
      return GitProviderReason.CredentialsInvalid;
    case "hostKeyUnknown":
      return GitProviderReason.HostKeyUnknown;
    case "notFound":
    case "failed":
      return GitProviderReason.RepositoryUnreachable;
  }
}

export function decideProvider(
  check: RemoteCheck,
  context: Omit<CheckContext, "forPush">,
  generation: number | undefined,
): ProviderDecision {
  const reason = providerReason(check);
  const message = describeCheck(check, { ...context, forPush: false });
  const recheck = recheckOf(check);
  const condition = (type: string, status: ConditionStatus, r = reason, m = message): ConditionUpdate => ({
    type,
    status,
    reason: r,
    message: m,
    observedGeneration: generation,
  });
  const succeeded = (type: string) => condition(type, "True", GitProviderReason.Succeeded, "");

  // Validated is about what the spec names; the remote's answer is Reachable's.
  const secretProblem = check.kind === "secretNotFound" || check.kind === "credentialUnreadable";
  const validated = secretProblem
    ? condition(GitProviderCondition.Validated, "False")
    : succeeded(GitProviderCondition.Validated);
  const reachable = secretProblem
    ? condition(
        GitProviderCondition.Reachable,
        "Unknown",
        reason,
        "Not checked: there is no usable credential.",
      )
    : check.kind === "answered"
      ? condition(GitProviderCondition.Reachable, "True")
      : condition(GitProviderCondition.Reachable, "False");

  const trio =
    check.kind === "answered"
      ? readyTrio(reason, message, generation)
      : recheck === "backoff"
        ? progressingTrio(reason, message, generation)
        : stalledTrio(reason, message, generation);
  return { conditions: [...trio, validated, reachable], verified: check.kind === "answered", recheck };
}
