// The WatchedTypeTable: what one GitTarget's rules claim of what its source serves. This is
// where rule matching happens: each claimed, followable (group, resource) gets one served
// version, and each (group, resource, namespace, selector) becomes one collection with one
// watch and one mark-and-sweep boundary.
import type { CompiledRule } from "../rulestore/compile.ts";
import type { RuleExclusions } from "../rulestore/exclusions.ts";
import type { TypeRecord } from "../typeset/registry.ts";
import type { Collection } from "../stream/collection.ts";
import { labelSelectorString } from "../kube/labels.ts";

export interface WatchPlan {
  collections: Collection[];
  /** Rules that matched no followable type the source serves. */
  unresolved: CompiledRule[];
  /**
   * Per collection key, what each rule object that selects it keeps out (undefined: nothing),
   * one entry per rule object: a write is kept out only when every one of them excludes it.
   */
  exclusions: Map<string, (RuleExclusions | undefined)[]>;
}

function matches(list: string[] | undefined, value: string): boolean {
  return list === undefined || list.includes("*") || list.includes(value);
}

/** The one served version a rule reads a group/resource at. */
function chooseVersion(candidates: TypeRecord[], apiVersions: string[] | undefined): TypeRecord | undefined {
  if (apiVersions && !apiVersions.includes("*")) {
    for (const version of apiVersions) {
      const served = candidates.find((t) => t.version === version);
      if (served) return served;
    }
    return undefined;
  }
  return (
    candidates.find((t) => t.preferred) ??
    [...candidates].sort((a, b) => b.version.localeCompare(a.version))[0]
  );
}

export function planCollections(rules: CompiledRule[], types: TypeRecord[]): WatchPlan {
  const collections = new Map<string, Collection>();
  const unresolved: CompiledRule[] = [];
  const selectedBy = new Map<string, Map<string, RuleExclusions | undefined>>();
  for (const rule of rules) {
    const byGroupResource = new Map<string, TypeRecord[]>();
    for (const type of types) {
      if (!type.followability.followable) continue;
      if (type.namespaced !== (rule.scope === "Namespaced")) continue;
      if (!matches(rule.apiGroups, type.group) || !matches(rule.resources, type.resource)) continue;
      const gr = `${type.group}/${type.resource}`;
      byGroupResource.set(gr, [...(byGroupResource.get(gr) ?? []), type]);
    }
    let resolved = false;
    for (const candidates of byGroupResource.values()) {
      const type = chooseVersion(candidates, rule.apiVersions);
      if (!type) continue;
      resolved = true;
      const namespace = type.namespaced ? rule.sourceNamespace : "";
      const labelSelector = labelSelectorString(rule.objectSelector);
      const key = `${type.group}/${type.resource}@${namespace}?${labelSelector}`;
      collections.set(key, {
        key,
        group: type.group,
        version: type.version,
        resource: type.resource,
        kind: type.kind,
        namespaced: type.namespaced,
        namespace,
        labelSelector,
        ...(labelSelector ? { selector: rule.objectSelector } : {}),
      });
      const origins = selectedBy.get(key) ?? new Map<string, RuleExclusions | undefined>();
      selectedBy.set(key, origins.set(rule.origin, rule.exclusions));
    }
    if (!resolved) unresolved.push(rule);
  }
  return {
    collections: [...collections.values()].sort((a, b) => a.key.localeCompare(b.key)),
    unresolved,
    exclusions: new Map([...selectedBy].map(([key, origins]) => [key, [...origins.values()]])),
  };
}
