// The instruments docs/metrics.md gives a row, for the tests that hold the guide and what the
// operator serves equal.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "./binaries.ts";

/** Node's runtime metrics, prom-client's defaults under our prefix: documented as a group. */
export const runtimeMetric = /^gitopsreverser_(process|nodejs)_/;

/** The instrument names docs/metrics.md gives a row: the first cell of each table row. */
export function documentedMetrics(): Set<string> {
  const text = readFileSync(join(repoRoot, "docs/metrics.md"), "utf8");
  return new Set([...text.matchAll(/^\| `(gitopsreverser_[a-z_]+)`\s*\|/gm)].map((m) => m[1]!));
}

/** The names an exposition declares (its # TYPE lines). */
export function declaredMetrics(exposition: string): Set<string> {
  return new Set([...exposition.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]!));
}
