// Where a run's time went: each file's time (the sum of its top-level suites and tests, which run
// one after another in the file's process), the slowest first, and every test that used more
// than a quarter of its timeout, which on a loaded machine is the next one to time out. make
// test's runner (test/run.ts) prints it after the spec reporter's output, and keeps the files'
// times to order the next run by.
import { relative } from "node:path";

/** How many files the summary lists. */
const shownFiles = 25;

export interface TestEvent {
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

/** Each file's time and each test's, from a run's events. */
export class RunTimes {
  /** Milliseconds by file, relative to the working directory. */
  readonly files = new Map<string, number>();
  private readonly tests: Finished[] = [];

  add(event: TestEvent): void {
    if (event.type !== "test:pass" && event.type !== "test:fail") return;
    const { name, nesting, file, details } = event.data;
    const ms = details?.duration_ms;
    if (!file || ms === undefined) return;
    const path = relative(process.cwd(), file);
    if (nesting === 0) this.files.set(path, (this.files.get(path) ?? 0) + ms);
    if (details?.type !== "suite") this.tests.push({ name, file: path, ms });
  }

  *summary(timeoutMs: number): Generator<string> {
    const total = [...this.files.values()].reduce((sum, ms) => sum + ms, 0);
    yield `\nWhere the time went: ${this.files.size} files, ${seconds(total)} in all (the run's wall time is less: files run side by side)\n`;
    for (const [file, ms] of [...this.files].sort((a, b) => b[1] - a[1]).slice(0, shownFiles))
      yield `  ${seconds(ms).padStart(7)}  ${file}\n`;
    const near = this.tests.filter((t) => t.ms > timeoutMs / 4).sort((a, b) => b.ms - a.ms);
    yield near.length === 0
      ? `No test used more than a quarter of the ${seconds(timeoutMs)} timeout.\n`
      : `Tests past a quarter of the ${seconds(timeoutMs)} timeout (${near.length}):\n`;
    for (const t of near) yield `  ${seconds(t.ms).padStart(7)}  ${t.file}: ${t.name}\n`;
  }
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
