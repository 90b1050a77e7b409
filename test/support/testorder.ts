// The order make test starts its files in: the longest first. Files run a few at a time, each
// taking the next place that frees up; started by name, the five-minute shards file came up
// when most of the run was over, and the run ended minutes after every other file had. Started
// first, the long files run beside each other and the short ones fill in around them.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";

/** Seconds a file took, by its path from the repository root. */
export type Durations = Record<string, number>;

/** What a file not measured yet is taken to need: an end-to-end file a minute, a unit file a second. */
export function guessed(file: string): number {
  return file.includes("/e2e/") ? 60 : 1;
}

/** `files` longest first, by `durations` or the guess; files of equal length by name. */
export function longestFirst(files: readonly string[], durations: Durations): string[] {
  const seconds = (file: string) => durations[file] ?? guessed(file);
  return [...files].sort((a, b) => seconds(b) - seconds(a) || a.localeCompare(b));
}

/** Where this machine keeps the times its last runs measured. */
export const cachedDurationsPath = join(
  process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"),
  "gitops-reverser",
  "test-durations.json",
);

/** The committed times (a fresh clone's), overlaid with this machine's own. */
export function loadDurations(committedPath: string, cachedPath = cachedDurationsPath): Durations {
  return { ...read(committedPath), ...read(cachedPath) };
}

/** The times a file holds; none where there is no file yet. */
function read(path: string): Durations {
  return existsSync(path) ? (JSON.parse(readFileSync(path, "utf8")) as Durations) : {};
}

/** Keeps a run's file times for the next run's order, over what was kept before. */
export function saveDurations(measured: ReadonlyMap<string, number>, cachedPath = cachedDurationsPath): void {
  const kept = read(cachedPath);
  for (const [file, ms] of measured) kept[file] = Math.round(ms / 100) / 10;
  mkdirSync(dirname(cachedPath), { recursive: true });
  writeFileSync(cachedPath, JSON.stringify(sorted(kept), null, 2) + "\n");
}

/** The entries by name, so a file written from them diffs well. */
export function sorted(durations: Durations): Durations {
  return Object.fromEntries(Object.entries(durations).sort(([a], [b]) => a.localeCompare(b)));
}
