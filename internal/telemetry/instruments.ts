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

export function registerInstruments(registry: Registry): void {
  registry.registerMetric(placementRefusals);
}
