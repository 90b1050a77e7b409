// Compiles WatchRule and ClusterWatchRule objects into the rules the watch plane resolves.
// Controllers and the startup bootstrap both call these, so a restart cannot seed a rule
// compiled any other way.
import type { ClusterWatchRule, LabelSelector, WatchRule } from "../../generated/v1alpha3/index.ts";
import type { NamespacedName } from "../types/names.ts";
import { compileExclusions, type RuleExclusions } from "./exclusions.ts";

/** A GitTarget, by its NamespacedName. */
export type TargetRef = NamespacedName;

/** One resource rule, with everything the watch plane needs to resolve it. */
export interface CompiledRule {
  /** The rule object it came from, as kind/namespace/name: the RuleStore's key. */
  origin: string;
  target: TargetRef;
  /** Namespaced rules come from WatchRules, cluster rules from ClusterWatchRules. */
  scope: "Namespaced" | "Cluster";
  /** Undefined means: the named resources in whichever served groups have them. */
  apiGroups: string[] | undefined;
  /** Undefined means: each resource's preferred version. */
  apiVersions: string[] | undefined;
  resources: string[];
  objectSelector: LabelSelector | undefined;
  /** The source namespace to watch; "" is every namespace, as one cluster-wide collection. */
  sourceNamespace: string;
  /** What the rule object keeps out (exclusions.ts), shared by all of its items; absent: nothing. */
  exclusions?: RuleExclusions;
}

export function originOf(kind: string, namespace: string | undefined, name: string): string {
  return namespace ? `${kind}/${namespace}/${name}` : `${kind}/${name}`;
}

/**
 * A WatchRule's items. sourceNamespace omitted means the rule's own namespace, "*" every
 * namespace the source credential can read, compiled to the one cluster-wide collection.
 */
export function compileWatchRule(rule: WatchRule): CompiledRule[] {
  const namespace = rule.metadata.namespace ?? "";
  const origin = originOf("WatchRule", namespace, rule.metadata.name ?? "");
  const exclusions = compileExclusions(rule.spec);
  return rule.spec.rules.map((item) => ({
    origin,
    target: { namespace, name: rule.spec.gitTargetRef.name },
    scope: "Namespaced",
    apiGroups: item.apiGroups,
    apiVersions: item.apiVersions,
    resources: item.resources,
    objectSelector: item.objectSelector,
    sourceNamespace: item.sourceNamespace === "*" ? "" : (item.sourceNamespace ?? namespace),
    ...(exclusions ? { exclusions } : {}),
  }));
}

export function compileClusterWatchRule(rule: ClusterWatchRule): CompiledRule[] {
  const origin = originOf("ClusterWatchRule", undefined, rule.metadata.name ?? "");
  const exclusions = compileExclusions(rule.spec);
  return rule.spec.rules.map((item) => ({
    origin,
    target: { namespace: rule.spec.gitTargetRef.namespace, name: rule.spec.gitTargetRef.name },
    scope: "Cluster",
    apiGroups: item.apiGroups,
    apiVersions: item.apiVersions,
    resources: item.resources,
    objectSelector: item.objectSelector,
    sourceNamespace: "",
    ...(exclusions ? { exclusions } : {}),
  }));
}
