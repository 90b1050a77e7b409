// The shape of the house, checked by make lint against the table in hack/layers.ts: each room
// imports only the rooms below it, never what a rule forbids, and a folder with a face only
// through it; and no file imports a file that imports it back, however far round (the circles
// the table allows aside). Every import counts: type-only ones (a type's home is a room too),
// re-exports (`export ... from`), side-effect imports (`import "./x.ts"`) and dynamic ones
// (`import("./x.ts")` with a literal path). Only relative imports name our files.
//
//   node --import ./hack/register.ts hack/imports.ts            check, and say what is wrong
//   node --import ./hack/register.ts hack/imports.ts --summary  the room graph's size, for a note
import { readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { layers, type Layers, type Pattern } from "./layers.ts";

export type ImportKind = "import" | "type import" | "side-effect import" | "dynamic import" | "re-export";

export interface Import {
  /** The imported file, relative to the root, with forward slashes. */
  to: string;
  kind: ImportKind;
}

export interface Problem {
  rule: "unlisted" | "order" | "forbidden" | "face" | "circle";
  message: string;
}

export interface Report {
  problems: Problem[];
  files: number;
  rooms: number;
  /** Room-to-room imports: pairs of rooms, each counted once. */
  roomImports: number;
}

const posix = (path: string) => path.split(sep).join("/");
const folderOf = (path: string) => {
  const at = path.lastIndexOf("/");
  return at < 0 ? "" : path.slice(0, at);
};

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

/** The relative module specifiers `text` imports, each with how. */
export function specifiersOf(text: string, fileName = "file.ts"): { specifier: string; kind: ImportKind }[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const found: { specifier: string; kind: ImportKind }[] = [];
  // Static imports are statements; an import() or import("x").T may be anywhere.
  const deep = /\bimport\s*\(/.test(text);
  const add = (node: ts.Node | undefined, kind: ImportKind) => {
    if (node && (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)))
      if (node.text.startsWith("./") || node.text.startsWith("../"))
        found.push({ specifier: node.text, kind });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) {
      const clause = node.importClause;
      add(
        node.moduleSpecifier,
        !clause
          ? "side-effect import"
          : clause.phaseModifier === ts.SyntaxKind.TypeKeyword
            ? "type import"
            : "import",
      );
    } else if (ts.isExportDeclaration(node)) {
      add(node.moduleSpecifier, "re-export");
    } else if (ts.isImportEqualsDeclaration(node)) {
      if (ts.isExternalModuleReference(node.moduleReference)) add(node.moduleReference.expression, "import");
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      add(node.arguments[0], "dynamic import");
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      add(node.argument.literal, "type import");
    }
    if (deep) ts.forEachChild(node, visit);
  };
  for (const statement of source.statements) visit(statement);
  return found;
}

/** Whether `room` is what `pattern` names: the room itself, or with `/**` any room under it. */
export function matches(pattern: Pattern, room: string): boolean {
  if (!pattern.endsWith("/**")) return room === pattern;
  const base = pattern.slice(0, -3);
  return room === base || room.startsWith(`${base}/`);
}

const under = (folder: string, path: string) => path.startsWith(`${folder}/`);

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
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node);
  return found;
}

/** The shortest way round a circle from its first node back to it, through its nodes only. */
function loopOf(circle: string[], graph: Map<string, Set<string>>): string[] {
  const members = new Set(circle);
  const start = circle[0]!;
  const cameFrom = new Map<string, string>();
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    const node = queue[i]!;
    for (const to of [...(graph.get(node) ?? [])].sort()) {
      if (!members.has(to)) continue;
      if (to === start) {
        const path = [node];
        while (path[0] !== start) path.unshift(cameFrom.get(path[0]!)!);
        return [...path, start];
      }
      if (!cameFrom.has(to)) {
        cameFrom.set(to, node);
        queue.push(to);
      }
    }
  }
  return [...circle, start];
}

/** Checks the TypeScript under `root` against `table`: every problem, and the graph's size. */
export function checkImports(root: string, table: Layers = layers): Report {
  const imports = new Map<string, Import[]>();
  for (const top of table.roots) {
    for (const file of sources(join(root, top))) {
      const from = posix(relative(root, file));
      const found = specifiersOf(readFileSync(file, "utf8"), file).map(({ specifier, kind }) => ({
        to: posix(relative(root, resolve(dirname(file), specifier))),
        kind,
      }));
      imports.set(from, found);
    }
  }
  const roomOf = (file: string) => table.carved[file] ?? folderOf(file);
  const rank = new Map(table.order.map((room, i) => [room, i]));
  const problems: Problem[] = [];

  const rooms = new Set([...imports.keys()].map(roomOf));
  for (const room of [...rooms].sort()) {
    if (!rank.has(room))
      problems.push({
        rule: "unlisted",
        message: `${room}/ is not a room of hack/layers.ts: add it to the order, above the rooms it imports`,
      });
  }

  const roomGraph = new Map<string, Set<string>>();
  for (const [from, found] of [...imports].sort(([a], [b]) => a.localeCompare(b))) {
    const fromRoom = roomOf(from);
    const edges = roomGraph.get(fromRoom) ?? new Set<string>();
    roomGraph.set(fromRoom, edges);
    for (const { to, kind } of found) {
      const toRoom = roomOf(to);
      if (toRoom === fromRoom) continue;
      const named = `${from} imports ${to} (${kind})`;
      for (const rule of table.forbidden) {
        if (rule.from.some((p) => matches(p, fromRoom)) && rule.to.some((p) => matches(p, toRoom)))
          problems.push({ rule: "forbidden", message: `${named}: ${rule.why} (hack/layers.ts)` });
      }
      for (const face of table.faces) {
        if (!under(face.folder, to) || to === face.face || under(face.folder, from)) continue;
        if (face.except.some((p) => matches(p, fromRoom))) continue;
        problems.push({
          rule: "face",
          message: `${named}: from outside ${face.folder}/, import ${face.face} alone; ${face.why} (hack/layers.ts)`,
        });
      }
      if (!imports.has(to)) continue;
      edges.add(toRoom);
      const [fromRank, toRank] = [rank.get(fromRoom), rank.get(toRoom)];
      if (fromRank !== undefined && toRank !== undefined && toRank > fromRank)
        problems.push({
          rule: "order",
          message: `${named}: ${fromRoom} sits below ${toRoom} in hack/layers.ts's order, and a room imports only the rooms below it`,
        });
    }
  }

  const fileGraph = new Map([...imports].map(([from, found]) => [from, new Set(found.map((i) => i.to))]));
  const kindOf = (from: string, to: string) => imports.get(from)!.find((i) => i.to === to)!.kind;
  for (const circle of circles(fileGraph)) {
    if (circle.every((file) => table.allowedCircles.some((room) => matches(room, roomOf(file))))) continue;
    const loop = loopOf(circle, fileGraph);
    const steps = loop
      .slice(0, -1)
      .map((file, i) => `${file} imports ${loop[i + 1]!} (${kindOf(file, loop[i + 1]!)})`);
    const rest = circle.filter((file) => !loop.includes(file));
    problems.push({
      rule: "circle",
      message:
        `files import each other: ${steps.join(", ")}` +
        (rest.length > 0 ? `; the same circle holds ${rest.join(", ")}` : "") +
        `: move the shared part down to a lower file or room (allowed circles: ${table.allowedCircles.join(", ")})`,
    });
  }
  for (const circle of circles(roomGraph)) {
    const loop = loopOf(circle, roomGraph);
    problems.push({
      rule: "circle",
      message: `rooms import each other: ${loop.join(" → ")}: move the shared part to the lower room (a type to its home)`,
    });
  }

  const roomImports = [...roomGraph.values()].reduce((sum, to) => sum + to.size, 0);
  return { problems, files: imports.size, rooms: rooms.size, roomImports };
}

if (import.meta.main) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
  const report = checkImports(root);
  if (process.argv.includes("--summary")) {
    console.log(`${report.files} files in ${report.rooms} rooms, ${report.roomImports} room-to-room imports`);
  }
  for (const problem of report.problems) console.error(problem.message);
  if (report.problems.length > 0) {
    console.error(`${report.problems.length} import problems; the rooms and rules are in hack/layers.ts`);
    process.exit(1);
  }
}
