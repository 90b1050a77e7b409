// A node:test reporter that ends a run with where its time went: each file's time (the sum of its
// top-level suites and tests, which run one after another in the file's process), the slowest
// first, and every test that used more than a quarter of its timeout, which on a loaded machine
// is the next one to time out. `make test` runs it beside the spec reporter.
import { relative } from "node:path";

/** --test-timeout in the Makefile: a test that names no timeout of its own has this one. */
const defaultTimeoutMs = 300_000;
/** How many files the summary lists. */
const shownFiles = 25;

interface TestEvent {
  type: string;
  data: {
    name: string;
    nesting: number;
    file?: string;
    details?: { duration_ms?: number; type?: string };
  };
}

interface Finished {
  name: string;
  file: string;
  ms: number;
}

export default async function* timesReporter(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  const files = new Map<string, number>();
  const tests: Finished[] = [];
  for await (const event of source) {
    if (event.type !== "test:pass" && event.type !== "test:fail") continue;
    const { name, nesting, file, details } = event.data;
    const ms = details?.duration_ms;
    if (!file || ms === undefined) continue;
    const path = relative(process.cwd(), file);
    if (nesting === 0) files.set(path, (files.get(path) ?? 0) + ms);
    if (details?.type !== "suite") tests.push({ name, file: path, ms });
  }
  yield* summary(files, tests);
}

function* summary(files: Map<string, number>, tests: Finished[]): Generator<string> {
  const total = [...files.values()].reduce((sum, ms) => sum + ms, 0);
  yield `\nWhere the time went: ${files.size} files, ${seconds(total)} in all (the run's wall time is less: files run side by side)\n`;
  for (const [file, ms] of [...files].sort((a, b) => b[1] - a[1]).slice(0, shownFiles))
    yield `  ${seconds(ms).padStart(7)}  ${file}\n`;
  const near = tests.filter((t) => t.ms > defaultTimeoutMs / 4).sort((a, b) => b.ms - a.ms);
  yield near.length === 0
    ? `No test used more than a quarter of the ${seconds(defaultTimeoutMs)} timeout.\n`
    : `Tests past a quarter of the ${seconds(defaultTimeoutMs)} timeout (${near.length}):\n`;
  for (const t of near) yield `  ${seconds(t.ms).padStart(7)}  ${t.file}: ${t.name}\n`;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
