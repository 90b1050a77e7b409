import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { Document, isMap, isScalar, isSeq, parseAllDocuments } from "yaml";
import { replaceDocument } from "../../../../internal/manifest/yamledit/edit.ts";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonMap = { [key: string]: Json };
type Path = (string | number)[];
type Generated<A> = A extends fc.Arbitrary<infer T> ? T : never;

// Strings a YAML writer gets wrong most easily: YAML 1.1 booleans, numbers and sexagesimals,
// indicators, comment markers, line breaks, surrounding spaces and non-ASCII text.
const tricky = [
  ...["", "yes", "no", "on", "off", "y", "n", "null", "~", "true", "123", "0777", "1:20", "1e3", "0x1F"],
  ...["a: b", "# hash", "x #y", "key:", "-", "- item", "[x]", "{y}", "@at", "*star", "&amp", "!bang"],
  ...["multi\nline", "trailing newline\n", "  indented\nlines", " lead", "trail ", "'single'", '"double"'],
  ...[">fold", "|pipe", "---", "a,b", "tab\there", "ünïcødé ✓ 日本"],
];

const keyArb = fc.oneof(
  fc.constantFrom(
    "app",
    "name",
    "image",
    "port",
    "env",
    "value",
    "yes",
    "on",
    "null",
    "123",
    "a b",
    "k: v",
    "",
  ),
  fc.string({ unit: "grapheme", minLength: 1, maxLength: 6 }),
);

const scalarArb: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom(...tricky),
  fc.string({ unit: "grapheme", maxLength: 10 }),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.constant(null),
);

const { value: valueArb, map: mapArb } = fc.letrec<{ value: Json; map: JsonMap; list: Json[] }>((tie) => ({
  value: fc.oneof({ depthSize: "small", withCrossShrink: true }, scalarArb, tie("map"), tie("list")),
  map: fc.dictionary(keyArb, tie("value"), { maxKeys: 4, noNullPrototype: true }),
  list: fc.array(tie("value"), { maxLength: 4 }),
}));

const manifestArb: fc.Arbitrary<JsonMap> = fc.record({
  apiVersion: fc.constantFrom("v1", "apps/v1"),
  kind: fc.constantFrom("ConfigMap", "Deployment", "Service"),
  metadata: fc.record({
    name: fc.constantFrom("api", "web", "yes"),
    labels: fc.dictionary(keyArb, fc.oneof(fc.constantFrom(...tricky), fc.string()), {
      maxKeys: 3,
      noNullPrototype: true,
    }),
  }),
  spec: mapArb,
});

const styleArb = fc.record({
  indent: fc.constantFrom(2, 4),
  indentSeq: fc.boolean(),
  // Consumed in document order, one per map entry: which comments it gets.
  comments: fc.array(fc.constantFrom("none", "above", "after", "both"), { minLength: 1, maxLength: 30 }),
  // Consumed one per collection of scalars: whether it is written as a flow collection.
  flows: fc.array(fc.boolean(), { minLength: 1, maxLength: 10 }),
  position: fc.constantFrom(0, 1, 2),
});

const editArb = fc.record({
  op: fc.constantFrom("set", "add", "remove", "array"),
  pick: fc.nat(),
  key: keyArb,
  scalar: scalarArb,
  value: valueArb,
  list: fc.array(valueArb, { maxLength: 4 }),
  arrayOp: fc.constantFrom("push", "pop", "set", "replace"),
});

interface Comment {
  path: Path;
  text: string;
}

/** A Kubernetes-shaped file, written by yaml, with comments on some keys and flow collections. */
function render(object: JsonMap, style: Generated<typeof styleArb>) {
  const document = new Document(object, { compat: "yaml-1.1", aliasDuplicateObjects: false });
  const comments: Comment[] = [];
  let entries = 0;
  let collections = 0;
  const decorate = (node: unknown, path: Path): void => {
    if (!isMap(node) && !isSeq(node)) return;
    const children: unknown[] = isMap(node) ? node.items.map((pair) => pair.value) : node.items;
    const leaf = children.length > 0 && children.every((child) => isScalar(child));
    if (leaf && style.flows[collections++ % style.flows.length]) {
      node.flow = true;
      return;
    }
    if (isSeq(node)) return node.items.forEach((item, i) => decorate(item, [...path, i]));
    for (const pair of node.items) {
      const here = [...path, isScalar(pair.key) ? String(pair.key.value) : ""];
      const choice = style.comments[entries++ % style.comments.length];
      const note = () => {
        const text = `note-${comments.length}-end`;
        comments.push({ path: here, text });
        return ` ${text}`;
      };
      if ((choice === "above" || choice === "both") && isScalar(pair.key)) pair.key.commentBefore = note();
      if ((choice === "after" || choice === "both") && isScalar(pair.value)) pair.value.comment = note();
      decorate(pair.value, here);
    }
  };
  decorate(document.contents, []);
  const text = document.toString({ lineWidth: 0, indent: style.indent, indentSeq: style.indentSeq });
  // What the file holds, which is what gets edited: at 4-space indentation yaml misplaces the
  // text of a block scalar that starts with a space.
  const original = parseAllDocuments(text)[0]!.toJS() as JsonMap;
  return { text, comments, original };
}

function* paths(value: Json, path: Path = []): Generator<{ path: Path; value: Json }> {
  yield { path, value };
  if (Array.isArray(value)) for (const [i, item] of value.entries()) yield* paths(item, [...path, i]);
  else if (value !== null && typeof value === "object") {
    for (const [key, item] of Object.entries(value)) yield* paths(item, [...path, key]);
  }
}

function at(root: Json, path: Path): Json | undefined {
  let node: Json | undefined = root;
  for (const step of path) {
    if (Array.isArray(node) && typeof step === "number") node = node[step];
    else if (node !== null && typeof node === "object" && !Array.isArray(node) && typeof step === "string") {
      node = Object.hasOwn(node, step) ? node[step] : undefined;
    } else return undefined;
  }
  return node;
}

/** The object after one random edit: a scalar changed, a key added or removed, or an array changed. */
function applyEdit(object: JsonMap, edit: Generated<typeof editArb>): JsonMap {
  const copy = structuredClone(object);
  const all = [...paths(copy)];
  const isMapValue = (v: Json) => v !== null && typeof v === "object" && !Array.isArray(v);
  const candidates = {
    set: all.filter((p) => p.path.length > 0 && (p.value === null || typeof p.value !== "object")),
    add: all.filter((p) => isMapValue(p.value)),
    remove: all.filter((p) => typeof p.path.at(-1) === "string"),
    array: all.filter((p) => Array.isArray(p.value)),
  }[edit.op];
  const target = candidates[edit.pick % Math.max(candidates.length, 1)];
  if (!target) return copy;
  const parentOf = (path: Path) => at(copy, path.slice(0, -1)) as Record<string | number, Json>;
  const last = target.path.at(-1)!;
  if (edit.op === "set") parentOf(target.path)[last] = edit.scalar;
  if (edit.op === "remove") delete parentOf(target.path)[last];
  if (edit.op === "add") {
    const map = target.value as JsonMap;
    let key = edit.key;
    while (Object.hasOwn(map, key)) key += "+";
    map[key] = edit.value;
  }
  if (edit.op === "array") {
    const list = target.value as Json[];
    if (edit.arrayOp === "push") list.push(edit.value);
    if (edit.arrayOp === "pop") list.pop();
    if (edit.arrayOp === "set" && list.length > 0) list[edit.pick % list.length] = edit.value;
    if (edit.arrayOp === "replace") parentOf(target.path)[last] = edit.list;
  }
  return copy;
}

const before = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a # sibling\n---\n";
const after = "---\n# a sibling below\nkind: Service\nspec: {ports: [80]}\n";

describe("replaceDocument on random manifests", () => {
  it("reads back as the edited object, keeps every comment whose key survives and its siblings' bytes", () => {
    fc.assert(
      fc.property(manifestArb, styleArb, editArb, (object, style, edit) => {
        const { text, comments, original } = render(object, style);
        const prefix = style.position > 0 ? before : "";
        const suffix = style.position < 2 ? after : "";
        const file = prefix + text + suffix;
        const index = style.position > 0 ? 1 : 0;
        const desired = applyEdit(original, edit);

        const result = replaceDocument(file, index, desired);

        const documents = parseAllDocuments(result);
        assert.deepEqual(documents[index]?.toJS(), desired);
        assert.equal(documents.length, (prefix ? 1 : 0) + 1 + (suffix ? 1 : 0));
        assert.ok(result.startsWith(prefix) && result.endsWith(suffix), "a sibling document changed");
        for (const comment of comments) {
          if (at(desired, comment.path) !== undefined) assert.ok(result.includes(comment.text), comment.text);
        }
        assert.equal(replaceDocument(result, index, desired), result, "a second edit changes the file again");
      }),
      { numRuns: 300 },
    );
  });

  it("changes at most the one line of a one-line scalar that changes to another one-line scalar", () => {
    fc.assert(
      fc.property(manifestArb, styleArb, fc.nat(), scalarArb, (object, style, pick, scalar) => {
        const { text, original } = render(object, style);
        const scalars = [...paths(original)].filter(
          (p) => p.path.length > 0 && (p.value === null || typeof p.value !== "object"),
        );
        const target = scalars[pick % scalars.length]!;
        const oneLine = (value: Json) => typeof value !== "string" || !value.includes("\n");
        fc.pre(oneLine(target.value) && oneLine(scalar));
        const desired = applyEdit(original, {
          op: "set",
          pick: scalars.indexOf(target),
          key: "",
          scalar,
          value: null,
          list: [],
          arrayOp: "push",
        });

        const result = replaceDocument(text, 0, desired).split("\n");

        const lines = text.split("\n");
        assert.equal(result.length, lines.length);
        assert.ok(result.filter((line, i) => line !== lines[i]).length <= 1);
      }),
      { numRuns: 300 },
    );
  });
});
