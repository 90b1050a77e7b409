// What holds a process's heap, from a V8 heap snapshot (make bench's (p) writes one with
// BENCH_HEAP_SNAPSHOT_DIR): the shallow size of every node, by what it is (a constructor's
// objects, strings, code, arrays, V8's own), largest first, as DevTools' summary counts them.
//   node bench/heapsummary.ts FILE.heapsnapshot [rows]
import { readFileSync } from "node:fs";

interface HeapSnapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

/** The category a node is counted under: its constructor for an object, else its kind. */
function category(type: string, name: string): string {
  switch (type) {
    case "object":
      return name;
    case "closure":
      return "(closures)";
    case "string":
    case "concatenated string":
    case "sliced string":
      return "(strings)";
    case "code":
      return "(compiled code)";
    case "array":
      return "(arrays: elements and properties)";
    case "number":
    case "bigint":
      return "(numbers)";
    default:
      return `(${type})`;
  }
}

function summarize(snapshot: HeapSnapshot): { category: string; bytes: number; count: number }[] {
  const fields = snapshot.snapshot.meta.node_fields;
  const types = snapshot.snapshot.meta.node_types[0];
  const [typeAt, nameAt, sizeAt] = ["type", "name", "self_size"].map((f) => fields.indexOf(f));
  const totals = new Map<string, { bytes: number; count: number }>();
  for (let i = 0; i < snapshot.nodes.length; i += fields.length) {
    const key = category(
      types[snapshot.nodes[i + typeAt!]!]!,
      snapshot.strings[snapshot.nodes[i + nameAt!]!]!,
    );
    const total = totals.get(key) ?? { bytes: 0, count: 0 };
    total.bytes += snapshot.nodes[i + sizeAt!]!;
    total.count++;
    totals.set(key, total);
  }
  return [...totals].map(([key, t]) => ({ category: key, ...t })).sort((a, b) => b.bytes - a.bytes);
}

const [file, rows = "30"] = process.argv.slice(2);
if (!file) throw new Error("usage: node bench/heapsummary.ts FILE.heapsnapshot [rows]");
const summary = summarize(JSON.parse(readFileSync(file, "utf8")) as HeapSnapshot);
const all = summary.reduce((sum, s) => sum + s.bytes, 0);
const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
console.log(`${mib(all)} MiB in ${summary.reduce((n, s) => n + s.count, 0)} nodes`);
for (const s of summary.slice(0, Number(rows))) {
  console.log(`${mib(s.bytes).padStart(7)} MiB ${String(s.count).padStart(9)}  ${s.category}`);
}
