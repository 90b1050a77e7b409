// make test's runner: node:test's run() over the files given, longest first (support/testorder.ts),
// TEST_CONCURRENCY at a time, each in its own process, with the spec reporter's output and then
// where the time went (support/timesreporter.ts). `node --test` would sort the files by name;
// run() keeps the order it is given.
//   node --import ./hack/register.ts test/run.ts 'test/unit/**/*.test.ts' test/e2e/flux/apply.test.ts
import { globSync } from "node:fs";
import { resolve } from "node:path";
import { finished } from "node:stream/promises";
import { run } from "node:test";
import { spec } from "node:test/reporters";
import { loadDurations, longestFirst, saveDurations } from "./support/testorder.ts";
import { RunTimes, type TestEvent } from "./support/timesreporter.ts";

/** A test that names no timeout of its own has this one. */
const timeoutMs = 300_000;
const concurrency = Number(process.env.TEST_CONCURRENCY ?? 5);

const files = [...new Set(process.argv.slice(2).flatMap((pattern) => globSync(pattern)))];
if (files.length === 0) {
  console.error(`test/run.ts: no file matches ${process.argv.slice(2).join(" ")}`);
  process.exit(2);
}
const ordered = longestFirst(files, loadDurations(resolve("test/durations.json")));

const times = new RunTimes();
const events = run({ files: ordered.map((f) => resolve(f)), concurrency, timeout: timeoutMs });
events.on("test:pass", (data: TestEvent["data"]) => times.add({ type: "test:pass", data }));
events.on("test:fail", (data: TestEvent["data"] & { todo?: unknown }) => {
  times.add({ type: "test:fail", data });
  if (data.todo === undefined || data.todo === false) process.exitCode = 1;
});
const output = events.compose(spec);
output.pipe(process.stdout, { end: false });
await finished(output);
for (const line of times.summary(timeoutMs)) process.stdout.write(line);
saveDurations(times.files);
