// May this GitBranch claim its branch with its GitProvider's credential at all? Checked before
// any push session, so a GitBranch its provider does not admit never touches the remote.
// Pure: the caller passes the provider it found and the branch namespace's labels.
import {
  GitBranchReason,
  type GitBranch,
  type GitBranchReasonType,
  type GitProvider,
} from "../../generated/v1alpha3/index.ts";
import { branchGrantVerdict } from "../grants/branches.ts";
import { keyOf } from "../types/names.ts";

export type Admission =
  | { admitted: true; provider: GitProvider; message: string }
  | { admitted: false; reason: GitBranchReasonType; message: string };

/** The GitProvider a GitBranch names: in the GitBranch's own namespace unless it names another. */
export function providerRefOf(branch: GitBranch): { namespace: string; name: string } {
  const ref = branch.spec.gitProviderRef;
  return { namespace: ref.namespace ?? branch.metadata.namespace!, name: ref.name };
}

export function admitBranch(
  branch: GitBranch,
  provider: GitProvider | undefined,
  namespaceLabels: Record<string, string>,
): Admission {
  const ref = providerRefOf(branch);
  const providerName = keyOf(ref);
  const namespace = branch.metadata.namespace!;
  const wanted = branch.spec.branch;
  if (!provider) {
    return {
      admitted: false,
      reason: GitBranchReason.GitProviderNotFound,
      message: `GitProvider ${providerName} does not exist.`,
    };
  }
  const grants = provider.spec.allowedGitBranches;
  const verdict = branchGrantVerdict(grants, ref.namespace, namespace, namespaceLabels, wanted);
  switch (verdict.verdict) {
    case "namespace":
      return {
        admitted: false,
        reason: GitBranchReason.NamespaceNotAuthorized,
        message:
          grants === undefined
            ? `GitProvider ${providerName} has no spec.allowedGitBranches, which admits no namespace, not even its own: add a grant for namespace ${namespace}.`
            : `GitProvider ${providerName}'s spec.allowedGitBranches admits no GitBranch from namespace ${namespace}.`,
      };
    case "branch":
      return {
        admitted: false,
        reason: GitBranchReason.BranchNotAllowed,
        message: `GitProvider ${providerName} lets namespace ${namespace} claim only ${verdict.patterns.map((p) => `"${p}"`).join(", ")}, and "${wanted}" matches none of them.`,
      };
    case "allowed":
      return {
        admitted: true,
        provider,
        message: `GitProvider ${providerName} admits namespace ${namespace} and branch "${wanted}".`,
      };
  }
}
