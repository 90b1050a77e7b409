// KEEP_TEST_LOGS=<dir> keeps, after each test environment stops, what a failure under load needs
// read afterwards: the operator's lines with their times, Flux's controller logs, each replica's
// log and repository. Each environment writes into a folder of its own, so files run at once do
// not mix. Unset, nothing is kept and nothing is paid for.
import { cpSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** The folder to keep `name`'s logs in, created; undefined when KEEP_TEST_LOGS is unset. */
export function keptFolder(name: string): string | undefined {
  const keep = process.env.KEEP_TEST_LOGS;
  if (!keep) return undefined;
  const into = join(keep, name);
  mkdirSync(into, { recursive: true });
  return into;
}

/** Copies `from` (a file or a folder) into the kept folder `name`, when logs are kept. */
export function keepCopy(name: string, from: string, as: string, filter?: (src: string) => boolean): void {
  const into = keptFolder(name);
  if (into) cpSync(from, join(into, as), { recursive: true, filter });
}

/** Writes `lines` into the kept folder `name`, when logs are kept. */
export function keepLines(name: string, as: string, lines: readonly string[]): void {
  const into = keptFolder(name);
  if (into) writeFileSync(join(into, as), lines.join("\n") + "\n");
}
