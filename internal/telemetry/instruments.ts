// The operator's own instruments. Each is created unregistered, and registerInstruments puts
// them on the process registry, so a test can build its own registry without duplicates.
import { Counter, type Registry } from "prom-client";
import { metricPrefix } from "./metrics.ts";

/**
 * Resources the writer refused fail-safe instead of writing them unsafely, by reason and by
 * GitTarget (a configuration object, so a bounded label; the resource itself never is one).
 */
export const placementRefusals = new Counter({
  name: `${metricPrefix}placement_refusals_total`,
  help: "Resources the writer refused to write rather than write unsafely, such as a Secret while encryption is unavailable.",
  labelNames: ["reason", "gittarget_namespace", "gittarget_name"] as const,
  registers: [],
});

/**
 * New documents by the placement rung that chose their path, per GitTarget and type: a type
 * placed by the built-in path in a folder with its own layout names the spec.placement line it needs.
 */
export const placements = new Counter({
  name: `${metricPrefix}placements_total`,
  help: "New documents placed, by the rung of the placement ladder that chose the path.",
  labelNames: ["source", "gittarget_namespace", "gittarget_name", "group", "version", "resource"] as const,
  registers: [],
});

/** Writes and live events dropped instead of written, by why; nothing replays them. */
export const writesDropped = new Counter({
  name: `${metricPrefix}git_writes_dropped_total`,
  help: "Writes dropped instead of written: a render gate that diverged or gave up its hold, or a folder the acceptance gate refused.",
  labelNames: ["reason", "gittarget_namespace", "gittarget_name"] as const,
  registers: [],
});

export function registerInstruments(registry: Registry): void {
  for (const metric of [placementRefusals, placements, writesDropped]) registry.registerMetric(metric);
}
