// ClusterWatchRule: the cluster-scoped peer of WatchRule. Its items pass the gate only when the
// GitTarget's KubeProvider grants the cluster resources they name.
import { clusterWatchRules, resourceTypes, type ClusterWatchRule } from "../generated/v1alpha3/index.ts";
import { ClusterWatchRuleCondition, ClusterWatchRuleReason } from "../generated/v1alpha3/conditions.ts";
import { informerSource } from "../internal/kube/sources.ts";
import { Controller, type Reconciler, type Request, type Result } from "../internal/operator/controller.ts";
import type { SharedInformer } from "../internal/operator/informer.ts";
import type { Manager } from "../internal/operator/manager.ts";
import { anyOf, generationChanged, readyTransition } from "../internal/operator/predicates.ts";
import { StatusWriter } from "../internal/operator/status.ts";
import { admitRules, type RuleLookups } from "../internal/rules/admit.ts";
import { compileClusterWatchRule, originOf } from "../internal/rulestore/compile.ts";
import type { RuleStore } from "../internal/rulestore/store.ts";
import type { SourceContexts } from "../internal/watch/sourcecontexts.ts";
import { fieldManager } from "../internal/operator/fieldmanager.ts";
import { ruleLookups, withExclusions } from "./watchrule.ts";

const recheckMs = 30_000;

export class ClusterWatchRuleReconciler implements Reconciler {
  private readonly status = new StatusWriter(fieldManager);

  constructor(
    private readonly manager: Manager,
    private readonly rules: SharedInformer<ClusterWatchRule>,
    private readonly lookups: RuleLookups,
  ) {}

  async reconcile(request: Request): Promise<Result> {
    const rule = this.rules.get(request.name);
    if (!rule) {
      await this.disown(request);
      return {};
    }
    const origin = originOf("ClusterWatchRule", undefined, request.name);
    const outcome = admitRules(
      this.lookups,
      origin,
      rule.spec.gitTargetRef,
      compileClusterWatchRule(rule),
      rule.metadata.generation,
      {
        type: ClusterWatchRuleCondition.ClusterResourcesAuthorized,
        reason: ClusterWatchRuleReason.ClusterResourceNotAuthorized,
      },
    );
    await this.status.write(clusterWatchRules(this.manager.kubeConfig), rule, {
      conditions: withExclusions(outcome.conditions, rule.spec, this.lookups, rule.metadata.generation),
      fields: { resolvedTypes: outcome.resolvedTypes },
    });
    return { requeueAfterMs: recheckMs };
  }

  /** Drops a rule that is gone, or whose GitTarget's branch another replica holds, from this process's store. */
  disown(request: Request): Promise<void> {
    this.lookups.store.delete(originOf("ClusterWatchRule", undefined, request.name));
    return Promise.resolve();
  }
}

export function setupClusterWatchRuleController(
  manager: Manager,
  store: RuleStore,
  sourceContexts: SourceContexts,
  /** With more than one replica: a GitTarget's shard; a rule is its GitTarget's. */
  targetShard?: (target: Request) => string | undefined,
): Controller {
  const { lookups, targets, providers } = ruleLookups(manager, store, sourceContexts);
  const rules = manager.informer<ClusterWatchRule>(
    informerSource(manager.kubeConfig, resourceTypes.ClusterWatchRule),
  );
  const all = () => rules.list().map((r) => ({ name: r.metadata.name! }));
  const controller = new Controller(
    "clusterwatchrule",
    new ClusterWatchRuleReconciler(manager, rules, lookups),
    manager.logger,
    targetShard
      ? {
          shardOf: (r: Request) => {
            const ref = rules.get(r.name)?.spec.gitTargetRef;
            return ref && targetShard(ref);
          },
        }
      : {},
  )
    .for(rules)
    .watches(targets, all, anyOf(generationChanged, readyTransition))
    .watches(providers, all, generationChanged);
  sourceContexts.onStreamsChanged((t) => {
    for (const r of rules.list()) {
      const ref = r.spec.gitTargetRef;
      if (ref.namespace === t.namespace && ref.name === t.name) controller.queue.add(r.metadata.name!);
    }
  });
  manager.addController(controller);
  return controller;
}
