// The status of a WatchRule or ClusterWatchRule: whether its items passed the gate, resolved to
// served types, and whether the GitTarget they feed can write.
import { WatchRuleCondition as C, WatchRuleReason as R } from "../../generated/v1alpha3/conditions.ts";
import {
  findCondition,
  progressingTrio,
  readyTrio,
  stalledTrio,
  type Condition,
  type ConditionUpdate,
} from "../operator/conditions.ts";
import type { CompiledRule } from "../rulestore/compile.ts";

export interface RuleWorld {
  generation: number | undefined;
  targetName: string;
  /** The GitTarget's conditions, or undefined when it does not exist. */
  targetConditions: Condition[] | undefined;
  refused: CompiledRule[];
  /** Items that resolved to nothing the source serves; undefined while no plan exists yet. */
  unresolved: CompiledRule[] | undefined;
  /** The target's watches, when a source context serves it. */
  streams: { total: number; running: number } | undefined;
  /** How the refusal reads for this kind: source namespaces, or cluster resources. */
  refusalType: string;
  refusalReason: string;
}

function describe(rule: CompiledRule): string {
  const where =
    rule.scope === "Cluster"
      ? "cluster-scoped"
      : rule.sourceNamespace === ""
        ? "every namespace"
        : `namespace ${rule.sourceNamespace}`;
  return `${rule.resources.join(",")} in ${where}`;
}

export function ruleConditions(world: RuleWorld): ConditionUpdate[] {
  const g = world.generation;
  const conditions: ConditionUpdate[] = [];
  const authorized: ConditionUpdate =
    world.refused.length === 0
      ? { type: world.refusalType, status: "True", reason: R.Succeeded, message: "", observedGeneration: g }
      : {
          type: world.refusalType,
          status: "False",
          reason: world.refusalReason,
          message: `The KubeProvider's grants do not admit: ${world.refused.map(describe).join("; ")}. Those items are not watched.`,
          observedGeneration: g,
        };
  const resolved: ConditionUpdate =
    world.unresolved === undefined
      ? {
          type: C.ResourcesResolved,
          status: "Unknown",
          reason: R.Progressing,
          message: "not planned yet",
          observedGeneration: g,
        }
      : world.unresolved.length === 0
        ? {
            type: C.ResourcesResolved,
            status: "True",
            reason: R.Succeeded,
            message: "",
            observedGeneration: g,
          }
        : {
            type: C.ResourcesResolved,
            status: "False",
            reason: R.NoMatchingResources,
            message: `No followable type the source serves matches: ${world.unresolved.map(describe).join("; ")}.`,
            observedGeneration: g,
          };
  const ready = findCondition(world.targetConditions, "Ready");
  const target: ConditionUpdate = !world.targetConditions
    ? {
        type: C.GitTargetReady,
        status: "False",
        reason: R.GitTargetNotFound,
        message: `GitTarget ${world.targetName} does not exist.`,
        observedGeneration: g,
      }
    : ready?.status === "True"
      ? { type: C.GitTargetReady, status: "True", reason: R.Succeeded, message: "", observedGeneration: g }
      : {
          type: C.GitTargetReady,
          status: "False",
          reason: R.GitTargetNotReady,
          message: ready?.message ?? "not reported yet",
          observedGeneration: g,
        };
  const streaming: ConditionUpdate =
    world.streams && world.streams.total > 0 && world.streams.running === world.streams.total
      ? { type: C.StreamsRunning, status: "True", reason: R.Succeeded, message: "", observedGeneration: g }
      : {
          type: C.StreamsRunning,
          status: "False",
          reason: R.Progressing,
          message: world.streams
            ? `${world.streams.running} of ${world.streams.total} collections streaming`
            : "not served yet",
          observedGeneration: g,
        };
  conditions.push(authorized, resolved, target, streaming);
  const trio =
    authorized.status === "False"
      ? stalledTrio(authorized.reason, authorized.message, g)
      : resolved.status === "False"
        ? progressingTrio(resolved.reason, resolved.message, g)
        : target.status !== "True"
          ? progressingTrio(target.reason, target.message, g)
          : readyTrio(R.Succeeded, "Every item is admitted, resolved and feeding a Ready GitTarget", g);
  return [...trio, ...conditions];
}
