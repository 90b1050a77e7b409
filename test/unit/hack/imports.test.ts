import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, it } from "node:test";
import { checkImports, specifiersOf, type Problem } from "../../../hack/imports.ts";
import { layers, type Layers } from "../../../hack/layers.ts";

const made: string[] = [];
after(() => {
  for (const root of made) rmSync(root, { recursive: true, force: true });
});

/** A fixture tree in a temp dir: each file at its path, with its text. */
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), "imports-"));
  made.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

/** A small house: nouns, the manifest room with its face, an engine above it, a worker on top. */
const table: Layers = {
  roots: ["src"],
  carved: {},
  order: ["src/types", "src/manifest", "src/engine", "src/worker", "src/loop"],
  forbidden: [{ from: ["src/engine"], to: ["src/manifest/**"], why: "the engine knows no manifest" }],
  faces: [{ folder: "src/manifest", face: "src/manifest/index.ts", except: [], why: "its face is index.ts" }],
  allowedCircles: ["src/loop"],
};

/** A tree that keeps every rule, importing in each way there is. */
const clean: Record<string, string> = {
  "src/types/noun.ts": "export interface Noun { name: string }\nexport const none = 0;\n",
  "src/manifest/index.ts":
    'export { write } from "./writer.ts";\nexport type { Noun } from "../types/noun.ts";\n',
  "src/manifest/writer.ts":
    'import type { Noun } from "../types/noun.ts";\nexport const write = (n: Noun) => n;\n',
  "src/engine/clone.ts":
    'import "../types/noun.ts";\nexport const clone = () => import("../types/noun.ts");\n',
  "src/worker/worker.ts": [
    'import { write } from "../manifest/index.ts";',
    'import { clone } from "../engine/clone.ts";',
    "// import('../loop/a.ts') in a comment is no import,",
    "const text = \"import('../loop/a.ts')\"; // nor in a string",
    "export const work = () => [write, clone, text];",
    "",
  ].join("\n"),
};

const check = (files: Record<string, string>, using: Layers = table): Problem[] =>
  checkImports(tree(files), using).problems;

const rules = (problems: Problem[]) => problems.map((p) => p.rule);

describe("the import checker", () => {
  it("passes a tree that keeps the table", () => {
    const report = checkImports(tree(clean), table);
    assert.deepEqual(report.problems, []);
    assert.equal(report.files, 5);
    assert.equal(report.rooms, 4);
  });

  it("reads every way of importing, and no import in a comment or a string", () => {
    const found = specifiersOf(
      [
        'import "./side.ts";',
        'import type { A } from "./type.ts";',
        'import { b } from "./static.ts";',
        'export * from "./star.ts";',
        'export { c } from "./named.ts";',
        'export const load = async () => (await import("./dynamic.ts")).d;',
        'type T = typeof import("./typeof.ts");',
        'import x from "node:fs";',
        '// import "./comment.ts";',
        "const s = 'import(\"./string.ts\")';",
      ].join("\n"),
    );
    assert.deepEqual(found, [
      { specifier: "./side.ts", kind: "side-effect import" },
      { specifier: "./type.ts", kind: "type import" },
      { specifier: "./static.ts", kind: "import" },
      { specifier: "./star.ts", kind: "re-export" },
      { specifier: "./named.ts", kind: "re-export" },
      { specifier: "./dynamic.ts", kind: "dynamic import" },
      { specifier: "./typeof.ts", kind: "type import" },
    ]);
  });

  it("fails a forbidden room pair, naming both files and the rule", () => {
    const problems = check({
      ...clean,
      "src/engine/clone.ts": 'import { write } from "../manifest/index.ts";\nexport const clone = write;\n',
    });
    assert.deepEqual(rules(problems), ["forbidden"]);
    assert.match(
      problems[0]!.message,
      /^src\/engine\/clone\.ts imports src\/manifest\/index\.ts \(import\): the engine knows no manifest/,
    );
  });

  it("fails an import of a room above, which the order does not allow", () => {
    const problems = check({
      ...clean,
      "src/types/noun.ts":
        'import type { work } from "../worker/worker.ts";\nexport type Noun = typeof work;\n',
    });
    assert.ok(rules(problems).includes("order"));
    assert.match(
      problems.find((p) => p.rule === "order")!.message,
      /src\/types\/noun\.ts imports src\/worker\/worker\.ts/,
    );
    assert.match(problems.find((p) => p.rule === "order")!.message, /src\/types sits below src\/worker/);
  });

  it("fails an import past a face", () => {
    const problems = check({
      ...clean,
      "src/worker/worker.ts": 'import { write } from "../manifest/writer.ts";\nexport const work = write;\n',
    });
    assert.deepEqual(rules(problems), ["face"]);
    assert.match(
      problems[0]!.message,
      /src\/worker\/worker\.ts imports src\/manifest\/writer\.ts.*src\/manifest\/index\.ts/,
    );
  });

  it("fails a folder the table does not list", () => {
    const problems = check({ ...clean, "src/attic/old.ts": "export const old = 1;\n" });
    assert.deepEqual(rules(problems), ["unlisted"]);
    assert.match(problems[0]!.message, /src\/attic/);
  });

  const circle = (a: string, b: string) => ({
    ...clean,
    "src/worker/a.ts": a,
    "src/worker/b.ts": b,
  });

  it("fails a circle of static imports", () => {
    const problems = check(
      circle(
        'import { b } from "./b.ts";\nexport const a = b;\n',
        'import type { a } from "./a.ts";\nexport const b = 1 as unknown as typeof a;\n',
      ),
    );
    assert.deepEqual(rules(problems), ["circle"]);
    assert.match(problems[0]!.message, /src\/worker\/a\.ts imports src\/worker\/b\.ts \(import\)/);
    assert.match(problems[0]!.message, /src\/worker\/b\.ts imports src\/worker\/a\.ts \(type import\)/);
  });

  it("fails a circle through a dynamic import", () => {
    const problems = check(
      circle(
        'export const a = async () => (await import("./b.ts")).b;\n',
        'import { a } from "./a.ts";\nexport const b = a;\n',
      ),
    );
    assert.deepEqual(rules(problems), ["circle"]);
    assert.match(problems[0]!.message, /src\/worker\/a\.ts imports src\/worker\/b\.ts \(dynamic import\)/);
  });

  it("fails a circle through a side-effect import", () => {
    const problems = check(
      circle('import "./b.ts";\nexport const a = 1;\n', 'import { a } from "./a.ts";\nexport const b = a;\n'),
    );
    assert.deepEqual(rules(problems), ["circle"]);
    assert.match(
      problems[0]!.message,
      /src\/worker\/a\.ts imports src\/worker\/b\.ts \(side-effect import\)/,
    );
  });

  it("fails a circle through a re-export", () => {
    const problems = check(
      circle('export { b } from "./b.ts";\n', 'import { a } from "./a.ts";\nexport const b = a;\n'),
    );
    assert.deepEqual(rules(problems), ["circle"]);
    assert.match(problems[0]!.message, /src\/worker\/a\.ts imports src\/worker\/b\.ts \(re-export\)/);
  });

  it("fails a circle between rooms, as files and as rooms", () => {
    const problems = check({
      ...clean,
      "src/engine/clone.ts": 'import { work } from "../worker/worker.ts";\nexport const clone = work;\n',
    });
    assert.deepEqual(rules(problems).sort(), ["circle", "circle", "order"]);
    assert.ok(
      problems.some((p) =>
        /^rooms import each other: src\/engine → src\/worker → src\/engine/.test(p.message),
      ),
    );
  });

  it("lets a circle inside an allowed room be", () => {
    const problems = check({
      ...clean,
      "src/loop/a.ts": 'import { b } from "./b.ts";\nexport const a = () => b;\n',
      "src/loop/b.ts": 'import { a } from "./a.ts";\nexport const b = () => a;\n',
    });
    assert.deepEqual(problems, []);
  });
});

describe("hack/layers.ts", () => {
  const house = (files: Record<string, string>) =>
    checkImports(tree(files), layers).problems.map((p) => `${p.rule}: ${p.message}`);

  it("keeps the Git engine from the manifest room", () => {
    const problems = house({
      "internal/manifest/index.ts": "export const facts = 1;\n",
      "internal/git/engine/sparsecheckout.ts":
        'import { facts } from "../../manifest/index.ts";\nexport const f = facts;\n',
    });
    assert.equal(problems.length, 1);
    assert.match(
      problems[0]!,
      /^forbidden: internal\/git\/engine\/sparsecheckout\.ts imports internal\/manifest\/index\.ts/,
    );
  });

  it("keeps the stream and the watch plane from the applier claims", () => {
    const problems = house({
      "internal/applier/decide/index.ts": "export interface AppliedBy { name: string }\n",
      "internal/stream/stream.ts":
        'import type { AppliedBy } from "../applier/decide/index.ts";\nexport type A = AppliedBy;\n',
      "internal/watch/appliedby.ts":
        'import type { AppliedBy } from "../applier/decide/index.ts";\nexport type A = AppliedBy;\n',
    });
    assert.equal(problems.length, 2);
    assert.match(
      problems[0]!,
      /^forbidden: internal\/stream\/stream\.ts imports internal\/applier\/decide\/index\.ts/,
    );
    assert.match(
      problems[1]!,
      /^forbidden: internal\/watch\/appliedby\.ts imports internal\/applier\/decide\/index\.ts/,
    );
  });

  it("keeps the applier's pure decisions off Kubernetes access and the clients", () => {
    const problems = house({
      "internal/kube/resourceclient.ts": "export const statusCodeOf = () => 0;\n",
      "internal/applier/decide/due.ts":
        'import { statusCodeOf } from "../../kube/resourceclient.ts";\nexport const d = statusCodeOf;\n',
    });
    assert.equal(problems.length, 1);
    assert.match(
      problems[0]!,
      /^forbidden: internal\/applier\/decide\/due\.ts imports internal\/kube\/resourceclient\.ts/,
    );
  });

  it("keeps Redis to the write path's face", () => {
    const problems = house({
      "internal/git/index.ts": 'export { LogFenced } from "./queue/writelog.ts";\n',
      "internal/git/queue/writelog.ts": "export class LogFenced extends Error {}\n",
      "internal/redis/writelog.ts":
        'import { LogFenced } from "../git/queue/writelog.ts";\nexport const f = LogFenced;\n',
    });
    assert.equal(problems.length, 1);
    assert.match(
      problems[0]!,
      /^face: internal\/redis\/writelog\.ts imports internal\/git\/queue\/writelog\.ts/,
    );
  });

  it("lists every room once", () => {
    assert.equal(new Set(layers.order).size, layers.order.length);
    for (const room of Object.values(layers.carved)) assert.ok(layers.order.includes(room), room);
  });
});
