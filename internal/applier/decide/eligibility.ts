// Whether an applier claim may act: it acts only while an eligible GitTarget references it.
// Eligible: in the claim's namespace, not being deleted, naming the claim, admitted by the
// claim's KubeProvider (spec.allowedApplierClaims, for the claim's namespace and the applier's),
// and writing the repository and branch the applier's source fetches. Judged from those inputs
// alone, never from the GitTarget's Ready, which reads the claim's own Ready back.
import type { KubeProvider } from "../../../generated/v1alpha3/kinds.ts";
import { FluxClaimReason as R } from "../../../generated/v1alpha3/conditions.ts";
import { admitsSourceNamespace, grantsAdmit } from "../../grants/namespaces.ts";
import { keyOf, type NamespacedName } from "../../types/names.ts";

export interface ReferringTarget {
  ref: NamespacedName;
  uid: string;
  /** What it writes (normalized URL, branch); undefined while its GitBranch or GitProvider is missing. */
  writes?: { repository: string; branch: string };
}

/** What the applier's source fetches; undefined branch when it pins a tag or a commit. */
export interface SourceFetch {
  repository: string;
  branch?: string;
  /** How to name it in a message. */
  describe: string;
}

export type Verdict =
  /** No GitTarget names the claim: it reads and writes nothing, and holds nothing. */
  | { kind: "notReferenced" }
  /** At least one eligible GitTarget names it. */
  | { kind: "bound"; targets: ReferringTarget[] }
  /** None is eligible yet while one cannot be judged: the hold, if any, is kept. */
  | { kind: "pending"; reason: string; message: string }
  /** Conclusively not eligible: a hold is handed back. */
  | { kind: "refused"; reason: string; message: string };

export interface ClaimConfig {
  claim: NamespacedName;
  targets: readonly ReferringTarget[];
  providerRef: NamespacedName;
  provider: KubeProvider | undefined;
  /** Labels of the claim's namespace, for Selector grants. */
  namespaceLabels: Record<string, string>;
  applier: NamespacedName;
}

/**
 * What can be judged without reading the applier's cluster: a claim nothing names, or whose
 * KubeProvider does not admit it, reads nothing there. Undefined when the applier may be read.
 */
export function judgeConfig(config: ClaimConfig): Verdict | undefined {
  if (config.targets.length === 0) return { kind: "notReferenced" };
  const { provider, providerRef, claim, applier } = config;
  const providerName = keyOf(providerRef);
  if (!provider) {
    return {
      kind: "refused",
      reason: R.KubeProviderNotFound,
      message: `KubeProvider ${providerName} does not exist.`,
    };
  }
  const grants = grantsAdmit(
    provider.spec.allowedApplierClaims,
    providerRef.namespace,
    claim.namespace,
    config.namespaceLabels,
  );
  if (grants.length === 0) {
    return {
      kind: "refused",
      reason: R.NamespaceNotAuthorized,
      message: `KubeProvider ${providerName} does not admit applier claims from namespace ${claim.namespace} (spec.allowedApplierClaims).`,
    };
  }
  if (!grants.some((g) => admitsSourceNamespace(g.applierNamespaces, claim.namespace, applier.namespace))) {
    return {
      kind: "refused",
      reason: R.ApplierNamespaceNotAllowed,
      message: `KubeProvider ${providerName} does not let claims from namespace ${claim.namespace} hold appliers in namespace ${applier.namespace} (spec.allowedApplierClaims[].applierNamespaces).`,
    };
  }
  return undefined;
}

/** Which referring GitTargets write what `source` fetches. */
export function judgeBinding(targets: readonly ReferringTarget[], source: SourceFetch): Verdict {
  const eligible = targets.filter(
    (t) => t.writes && t.writes.repository === source.repository && t.writes.branch === source.branch,
  );
  if (eligible.length > 0) return { kind: "bound", targets: eligible };
  const unjudged = targets.filter((t) => !t.writes);
  if (unjudged.length > 0) {
    return {
      kind: "pending",
      reason: R.NotBound,
      message: `No GitTarget naming this claim is eligible yet: the GitBranch or GitProvider of ${unjudged.map((t) => keyOf(t.ref)).join(", ")} cannot be read.`,
    };
  }
  const written = [...new Set(targets.map((t) => `${t.writes!.repository} branch ${t.writes!.branch}`))];
  return {
    kind: "refused",
    reason: R.SourceMismatch,
    message: `${source.describe}, but the GitTargets naming this claim write ${written.join("; ")}. Point the source at the branch the GitTargets write, or name the claim from a GitTarget that writes it.`,
  };
}
