// ApplierClaimReady: present only with spec.applierClaimRef, it says the applier claim is Ready
// (its applier exists, can be written, and is held) and applies this target's repository and
// branch. It is a gate on the target's Ready. A claim's Ready never reads the target's back
// (the claim judges eligibility from the target's inputs), so the two cannot wait on each other.
import type {
  ApplierClaimStatus,
  ArgoCDClaim,
  FluxClaim,
  GitBranch,
  GitProvider,
  GitTarget,
  WebhookClaim,
} from "../../generated/v1alpha3/index.ts";
import type { AppliedBy } from "../types/applied.ts";
import { normalizeRepositoryUrl } from "../types/repourl.ts";
import type { NamespacedName } from "../types/names.ts";
import { GitTargetCondition as C, GitTargetReason as R } from "../../generated/v1alpha3/conditions.ts";
import type { ConditionUpdate } from "../operator/conditions.ts";

export interface ClaimFacts {
  kind: string;
  name: string;
  /** The claim's status; undefined when no such claim exists. */
  status?: ApplierClaimStatus;
  /** What this target writes (normalized URL, branch), once its GitBranch and GitProvider are read. */
  writes?: Writes;
}

export interface Writes {
  repository: string;
  branch: string;
  /** The GitBranch's spec.push.refspec: its writes go to this review ref, never to the branch. */
  reviewRef?: string;
}

/**
 * The repository (normalized URL) and branch a GitTarget writes, through its GitBranch and that
 * branch's GitProvider; undefined while either cannot be read.
 */
export function targetWrites(
  target: GitTarget,
  branchOf: (ref: NamespacedName) => GitBranch | undefined,
  providerOf: (ref: NamespacedName) => GitProvider | undefined,
): Writes | undefined {
  const namespace = target.metadata.namespace!;
  const branch = branchOf({
    namespace: target.spec.gitBranchRef.namespace ?? namespace,
    name: target.spec.gitBranchRef.name,
  });
  const ref = branch?.spec.gitProviderRef;
  const provider =
    ref && providerOf({ namespace: ref.namespace ?? branch.metadata.namespace!, name: ref.name });
  const reviewRef = branch?.spec.push?.refspec;
  return branch && provider
    ? {
        repository: normalizeRepositoryUrl(provider.spec.url),
        branch: branch.spec.branch,
        ...(reviewRef !== undefined ? { reviewRef } : {}),
      }
    : undefined;
}

/**
 * The applier a GitTarget's claim holds: the owner of its folder, once the claim exists. A
 * WebhookClaim's applier is a tool outside the cluster that owns no object by a label: none.
 */
export function claimedApplier(
  target: GitTarget,
  claim: FluxClaim | ArgoCDClaim | WebhookClaim | undefined,
): Required<AppliedBy> | undefined {
  if (!claim || claim.kind === "WebhookClaim") return undefined;
  const own = target.metadata.namespace!;
  const ref = claim.kind === "FluxClaim" ? claim.spec.kustomizationRef : claim.spec.applicationRef;
  const kind = claim.kind === "FluxClaim" ? "Kustomization" : "Application";
  return { kind, namespace: ref.namespace ?? own, name: ref.name };
}

export function applierClaimCondition(facts: ClaimFacts, generation: number | undefined): ConditionUpdate {
  const at = (status: ConditionUpdate["status"], reason: string, message: string): ConditionUpdate => ({
    type: C.ApplierClaimReady,
    status,
    reason,
    message,
    observedGeneration: generation,
  });
  const name = `${facts.kind} ${facts.name}`;
  if (!facts.status) return at("False", R.ApplierClaimNotFound, `${name} does not exist in this namespace.`);
  // Nothing a review push carries is on the branch until a review merges it: no applier is asked.
  if (facts.writes?.reviewRef !== undefined) {
    return at(
      "False",
      R.ApplierClaimNotReady,
      `${name} is asked for nothing: this GitTarget's GitBranch pushes to the review ref ${facts.writes.reviewRef}, so nothing it writes is merged until a review merges it. Remove spec.applierClaimRef, or write through a GitBranch without spec.push.refspec.`,
    );
  }
  const conditions = facts.status.conditions ?? [];
  const configured = conditions.find((c) => c.type === "Configured");
  const ready = conditions.find((c) => c.type === "Ready");
  if (!configured || configured.reason === "NotReferenced") {
    return at("Unknown", R.ApplierClaimNotReady, `${name} has not observed this GitTarget yet.`);
  }
  if (ready?.status !== "True" || configured.status !== "True") {
    const why = configured.status !== "True" ? configured : ready;
    return at(
      ready?.status === "Unknown" ? "Unknown" : "False",
      R.ApplierClaimNotReady,
      `${name}: ${why?.message ?? "not Ready"}`,
    );
  }
  const source = facts.status.source;
  const applies =
    facts.writes &&
    source?.url &&
    normalizeRepositoryUrl(source.url) === facts.writes.repository &&
    source.branch === facts.writes.branch;
  if (!applies) {
    return at(
      "False",
      R.ApplierClaimNotReady,
      `${name} applies ${source?.url ?? "an unknown repository"} branch ${source?.branch ?? "(none)"}, not what this GitTarget writes.`,
    );
  }
  return at("True", R.Succeeded, `${name} holds its applier, which applies this repository and branch.`);
}
