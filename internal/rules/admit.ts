// What both rule reconcilers do once they have compiled a rule object: look up the GitTarget it
// feeds and that target's KubeProvider, pass the items through the gate, put the admitted ones
// in the RuleStore, and derive the status.
import type { GitTarget, KubeProvider } from "../../generated/v1alpha3/index.ts";
import { refOf, keyOf } from "../types/names.ts";
import type { ConditionUpdate } from "../operator/conditions.ts";
import type { CompiledRule, TargetRef } from "../rulestore/compile.ts";
import type { RuleStore } from "../rulestore/store.ts";
import type { SourceContexts } from "../watch/sourcecontexts.ts";
import { ruleConditions } from "./conditions.ts";
import { gateRules } from "./gate.ts";

export interface RuleLookups {
  target(ref: TargetRef): GitTarget | undefined;
  provider(namespace: string, name: string): KubeProvider | undefined;
  namespaceLabels(namespace: string): Record<string, string>;
  sourceContexts: SourceContexts;
  store: RuleStore;
}

export interface RuleOutcome {
  conditions: ConditionUpdate[];
  resolvedTypes: number;
}

export function admitRules(
  lookups: RuleLookups,
  origin: string,
  target: TargetRef,
  compiled: CompiledRule[],
  generation: number | undefined,
  refusal: { type: string; reason: string },
): RuleOutcome {
  const gitTarget = lookups.target(target);
  const providerRef = gitTarget ? refOf(gitTarget.spec.kubeProviderRef, target.namespace) : undefined;
  const provider = providerRef ? lookups.provider(providerRef.namespace, providerRef.name) : undefined;
  const { admitted, refused } = gateRules(
    compiled,
    provider,
    target.namespace,
    lookups.namespaceLabels(target.namespace),
  );
  lookups.store.set(origin, admitted);

  const watchManager = providerRef ? lookups.sourceContexts.get(keyOf(providerRef))?.watchManager : undefined;
  const plan = watchManager?.planOf(target);
  const unresolved = plan ? plan.unresolved.filter((r) => r.origin === origin) : undefined;
  const resolvedTypes = plan ? plan.collections.length : 0;
  return {
    conditions: ruleConditions({
      generation,
      targetName: keyOf(target),
      targetConditions: gitTarget ? (gitTarget.status?.conditions ?? []) : undefined,
      refused,
      unresolved,
      streams: watchManager?.serves(target) ? watchManager.summary(target) : undefined,
      refusalType: refusal.type,
      refusalReason: refusal.reason,
    }),
    resolvedTypes,
  };
}
