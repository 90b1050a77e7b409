// WatchRule: compiles the rule into the RuleStore, through the source-namespace gate, and
// reports whether it resolved and feeds a Ready GitTarget.
import type { KubernetesObject, V1Namespace } from "@kubernetes/client-node";
import {
  resourceTypes,
  watchRules,
  type GitTarget,
  type KubeProvider,
  type WatchRule,
} from "../generated/v1alpha3/index.ts";
import { WatchRuleCondition, WatchRuleReason } from "../generated/v1alpha3/conditions.ts";
import { informerSource, namespaceType } from "../internal/kube/sources.ts";
import { Controller, type Reconciler, type Request, type Result } from "../internal/operator/controller.ts";
import type { SharedInformer } from "../internal/operator/informer.ts";
import type { Manager } from "../internal/operator/manager.ts";
import { anyOf, generationChanged, labelsChanged, readyTransition } from "../internal/operator/predicates.ts";
import { StatusWriter } from "../internal/operator/status.ts";
import { admitRules, type RuleLookups } from "../internal/rules/admit.ts";
import { compileWatchRule, originOf } from "../internal/rulestore/compile.ts";
import { exclusionsEffective, type ExclusionSpec } from "../internal/rulestore/exclusions.ts";
import { stalledTrio, type ConditionUpdate } from "../internal/operator/conditions.ts";
import type { RuleStore } from "../internal/rulestore/store.ts";
import type { SourceContexts } from "../internal/watch/sourcecontexts.ts";
import { fieldManager } from "../internal/operator/fieldmanager.ts";
import { keyOf } from "../internal/types/names.ts";

const recheckMs = 30_000;

export class WatchRuleReconciler implements Reconciler {
  private readonly status = new StatusWriter(fieldManager);

  constructor(
    private readonly manager: Manager,
    private readonly rules: SharedInformer<WatchRule>,
    private readonly lookups: RuleLookups,
  ) {}

  async reconcile(request: Request): Promise<Result> {
    const rule = this.rules.get(request.name, request.namespace);
    if (!rule) {
      await this.disown(request);
      return {};
    }
    const origin = originOf("WatchRule", request.namespace, request.name);
    const target = { namespace: rule.metadata.namespace!, name: rule.spec.gitTargetRef.name };
    const outcome = admitRules(
      this.lookups,
      origin,
      target,
      compileWatchRule(rule),
      rule.metadata.generation,
      {
        type: WatchRuleCondition.SourceNamespaceAuthorized,
        reason: WatchRuleReason.SourceNamespaceNotAuthorized,
      },
    );
    await this.status.write(watchRules(this.manager.kubeConfig), rule, {
      conditions: withExclusions(outcome.conditions, rule.spec, this.lookups, rule.metadata.generation),
      fields: { resolvedTypes: outcome.resolvedTypes },
    });
    return { requeueAfterMs: recheckMs };
  }

  /** Drops a rule that is gone, or whose GitTarget's branch another replica holds, from this process's store. */
  disown(request: Request): Promise<void> {
    this.lookups.store.delete(originOf("WatchRule", request.namespace, request.name));
    return Promise.resolve();
  }
}

/**
 * The rule's conditions with ExclusionsEffective: excludeUsers with attribution off cannot be
 * judged, which a rule otherwise Ready reports as Stalled, since writes it asked to keep out are
 * mirrored until someone turns attribution on or names the tools' field managers instead.
 */
export function withExclusions(
  conditions: ConditionUpdate[],
  spec: ExclusionSpec,
  lookups: Pick<RuleLookups, "sourceContexts">,
  generation: number | undefined,
): ConditionUpdate[] {
  const verdict = exclusionsEffective(spec, lookups.sourceContexts.attributing);
  const effective: ConditionUpdate = {
    type: WatchRuleCondition.ExclusionsEffective,
    ...verdict,
    observedGeneration: generation,
  };
  const ready = conditions.find((c) => c.type === WatchRuleCondition.Ready);
  if (verdict.status === "True" || ready?.status !== "True") return [...conditions, effective];
  const trio = stalledTrio(verdict.reason, verdict.message, generation);
  const kstatus = new Set(trio.map((c) => c.type));
  return [...trio, ...conditions.filter((c) => !kstatus.has(c.type)), effective];
}

/** Lookups over the shared informers, for both rule reconcilers. */
export function ruleLookups(manager: Manager, store: RuleStore, sourceContexts: SourceContexts) {
  const kc = manager.kubeConfig;
  const targets = manager.informer<GitTarget>(informerSource(kc, resourceTypes.GitTarget));
  const providers = manager.informer<KubeProvider>(informerSource(kc, resourceTypes.KubeProvider));
  const namespaces = manager.informer<V1Namespace>(informerSource(kc, namespaceType));
  const lookups: RuleLookups = {
    target: (ref) => targets.get(ref.name, ref.namespace),
    provider: (namespace, name) => providers.get(name, namespace),
    namespaceLabels: (namespace) => namespaces.get(namespace)?.metadata?.labels ?? {},
    sourceContexts,
    store,
  };
  return { lookups, targets, providers, namespaces };
}

export function setupWatchRuleController(
  manager: Manager,
  store: RuleStore,
  sourceContexts: SourceContexts,
  /** With more than one replica: a GitTarget's shard; a rule is its GitTarget's. */
  targetShard?: (target: Request) => string | undefined,
): Controller {
  const { lookups, targets, providers, namespaces } = ruleLookups(manager, store, sourceContexts);
  const rules = manager.informer<WatchRule>(informerSource(manager.kubeConfig, resourceTypes.WatchRule));
  const rulesIn = (namespace: string | undefined, pick: (r: WatchRule) => boolean = () => true) =>
    rules
      .list(namespace)
      .filter(pick)
      .map((r) => ({ namespace: r.metadata.namespace, name: r.metadata.name! }));
  const rulesFeeding = (t: KubernetesObject) =>
    rulesIn(t.metadata?.namespace, (r) => r.spec.gitTargetRef.name === t.metadata?.name);
  const controller = new Controller(
    "watchrule",
    new WatchRuleReconciler(manager, rules, lookups),
    manager.logger,
    targetShard ? { shardOf: (r: Request) => ruleShard(rules.get(r.name, r.namespace), targetShard) } : {},
  )
    .for(rules)
    .watches(targets, rulesFeeding, anyOf(generationChanged, readyTransition))
    .watches(providers, () => rulesIn(undefined), generationChanged)
    .watches(namespaces, (ns) => rulesIn(ns.metadata?.name), labelsChanged);
  // A collection of the target changing state moves ResourcesResolved and StreamsRunning.
  sourceContexts.onStreamsChanged((t) => {
    for (const r of rulesFeeding({ metadata: { namespace: t.namespace, name: t.name } })) {
      controller.queue.add(keyOf(r));
    }
  });
  manager.addController(controller);
  return controller;
}

/** A WatchRule's shard: its GitTarget's, in the rule's namespace. */
function ruleShard(rule: WatchRule | undefined, targetShard: (target: Request) => string | undefined) {
  return rule && targetShard({ namespace: rule.metadata.namespace, name: rule.spec.gitTargetRef.name });
}
