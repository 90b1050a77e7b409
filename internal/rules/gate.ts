// The source-namespace gate: a rule item reaches the RuleStore only when the KubeProvider's
// grants let the GitTarget's namespace watch what it names. A rule item that fails the gate is
// left out, never compiled with the operator's broader reach.
import type { KubeProvider } from "../../generated/v1alpha3/index.ts";
import { admitsSourceNamespace, grantsAdmit } from "../grants/namespaces.ts";
import type { CompiledRule } from "../rulestore/compile.ts";

export interface GateResult {
  admitted: CompiledRule[];
  refused: CompiledRule[];
}

type Grant = NonNullable<KubeProvider["spec"]["allowedGitTargets"]>[number];

function covers(list: string[], value: string): boolean {
  return list.includes("*") || list.includes(value);
}

/** Whether a cluster-resource grant admits every group and resource a cluster rule names. */
function clusterGrantCovers(grant: Grant, rule: CompiledRule): boolean {
  return (grant.clusterResources ?? []).some(
    (allowed) =>
      (rule.apiGroups ?? ["*"]).every((g) => covers(allowed.apiGroups, g)) &&
      rule.resources.every((r) => covers(allowed.resources, r)),
  );
}

/**
 * Splits a rule object's items into those the provider admits and those it refuses. A
 * namespaced item naming the GitTarget's own namespace needs only the grant that admits the
 * namespace at all; any other source namespace, "*" included, must be in the grant's
 * sourceNamespaces. A cluster item must be covered by the grant's clusterResources.
 */
export function gateRules(
  rules: CompiledRule[],
  provider: KubeProvider | undefined,
  targetNamespace: string,
  namespaceLabels: Record<string, string>,
): GateResult {
  const grants = provider
    ? grantsAdmit(
        provider.spec.allowedGitTargets,
        provider.metadata.namespace!,
        targetNamespace,
        namespaceLabels,
      )
    : [];
  const result: GateResult = { admitted: [], refused: [] };
  for (const rule of rules) {
    const ok =
      rule.scope === "Cluster"
        ? grants.some((g) => clusterGrantCovers(g, rule))
        : grants.length > 0 &&
          (rule.sourceNamespace === targetNamespace ||
            grants.some((g) =>
              admitsSourceNamespace(g.sourceNamespaces, targetNamespace, rule.sourceNamespace),
            ));
    (ok ? result.admitted : result.refused).push(rule);
  }
  return result;
}
