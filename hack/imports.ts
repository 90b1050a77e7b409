// The shape of the house, checked by make lint: no import circle between files, and none between
// folders, so every folder sits above the folders it imports and the rooms can be read bottom
// up. Type-only imports count: a type's home is a room too. The one circle allowed is inside
// internal/commitmessage, a small interpreter whose evaluator and functions call each other.
//
//   node --import ./hack/register.ts hack/imports.ts            check, and say what is wrong
//   node --import ./hack/register.ts hack/imports.ts --summary  the folder graph's size, for a note
import { readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const checked = ["internal", "controllers", "cmd"];
const allowedCircles = ["internal/commitmessage/"];

function sources(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith(".ts") ? [path] : [];
  });
}

/** Every relative import and re-export of `file`, as repository paths. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const found: string[] = [];
  for (const match of text.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s+"(\.{1,2}\/[^"]+)"/gms)) {
    found.push(relative(root, resolve(dirname(file), match[1]!)));
  }
  return found;
}

/** The strongly connected components of more than one node: the circles. */
function circles(graph: Map<string, Set<string>>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string) => {
    index.set(node, next);
    low.set(node, next++);
    stack.push(node);
    onStack.add(node);
    for (const to of graph.get(node) ?? []) {
      if (!graph.has(to)) continue;
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) low.set(node, Math.min(low.get(node)!, index.get(to)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1) found.push(component.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

const files = new Map<string, Set<string>>();
for (const top of checked) {
  for (const file of sources(join(root, top))) files.set(relative(root, file), new Set(importsOf(file)));
}
const folders = new Map<string, Set<string>>();
for (const [file, imports] of files) {
  const from = dirname(file);
  const to = folders.get(from) ?? new Set<string>();
  for (const imported of imports)
    if (files.has(imported) && dirname(imported) !== from) to.add(dirname(imported));
  folders.set(from, to);
}

if (process.argv.includes("--summary")) {
  const edges = [...folders.values()].reduce((sum, to) => sum + to.size, 0);
  console.log(`${files.size} files in ${folders.size} folders, ${edges} folder-to-folder imports`);
}
const fileCircles = circles(files).filter(
  (c) => !c.every((f) => allowedCircles.some((a) => f.startsWith(a))),
);
const folderCircles = circles(folders);
for (const circle of fileCircles) console.error(`files import each other: ${circle.join(", ")}`);
for (const circle of folderCircles) console.error(`folders import each other: ${circle.join(", ")}`);
if (fileCircles.length + folderCircles.length > 0) {
  console.error("move the shared part to the lower folder (a type to its home, see docs/architecture.md)");
  process.exit(1);
}
