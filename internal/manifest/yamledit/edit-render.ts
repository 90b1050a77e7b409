// Text for values the editor inserts, laid out like the file around them. The structure of block
// collections is written here, at the file's own indentation (yaml's indentSeq: false is only
// right for 2-space files); every scalar is written by yaml, which knows its quoting rules.
import { Document, isScalar, visit, type Scalar } from "yaml";
import { yamlOptions } from "../../sanitize/yamlstrings.ts";
import { isPlainObject } from "./edit-json.ts";
import type { Layout } from "./edit-layout.ts";
import { indentContinuation } from "./edit-text.ts";

const documentOptions = {
  // A manifest spells out every value: a sub-object met twice is written twice, never aliased.
  aliasDuplicateObjects: false,
  // Go readers of manifests follow YAML 1.1, where yes, on and 1:20 are not strings: quote them;
  // and a control character or a line separator is written escaped.
  ...yamlOptions,
} as const;

// Never fold a long string (an annotation, a command line) across lines.
const toStringOptions = { lineWidth: 0 } as const;

/** Where a value goes in block context: after `key:` at `column`, or after a `-` at `column`. */
export interface BlockPlace {
  kind: "pair" | "item";
  column: number;
}

/** The text that follows the `:` or `-` indicator at `place` to write `value` there. */
export function renderAfterIndicator(
  value: unknown,
  place: BlockPlace,
  layout: Layout,
  scalarType?: Scalar.Type,
): string {
  if (!isNonEmptyCollection(value)) return renderScalarAfter(value, place, layout, scalarType);
  if (place.kind === "item") {
    // Compact form: the first entry shares the dash's line, the rest align under it.
    return ` ${renderBlock(value, place.column + 2, layout).slice(place.column + 2)}`;
  }
  const column = place.column + (Array.isArray(value) ? layout.seqIndent : layout.indent);
  return `\n${renderBlock(value, column, layout)}`;
}

/** `key: value` lines at `column`, without a final newline. */
export function renderPair(key: string, value: unknown, column: number, layout: Layout): string {
  return `${" ".repeat(column)}${renderKey(key)}:${renderAfterIndicator(value, { kind: "pair", column }, layout)}`;
}

/** `- value` lines at `column`, without a final newline. */
export function renderItem(value: unknown, column: number, layout: Layout, scalarType?: Scalar.Type): string {
  return `${" ".repeat(column)}-${renderAfterIndicator(value, { kind: "item", column }, layout, scalarType)}`;
}

/** A whole document's text, ending with a newline. */
export function renderRoot(value: unknown, layout: Layout): string {
  if (isNonEmptyCollection(value)) return `${renderBlock(value, 0, layout)}\n`;
  return new Document(value, documentOptions).toString(toStringOptions);
}

/** `value` as a flow-context element, on one line. */
export function renderFlow(value: unknown, scalarType?: Scalar.Type): string {
  const document = new Document([value], documentOptions);
  keepStyle(document.get(0, true), scalarType);
  return unwrapFlow(document, "[ ", " ]");
}

/** `key: value` as a flow-map entry, on one line. */
export function renderFlowPair(key: string, value: unknown): string {
  return unwrapFlow(new Document({ [key]: value }, documentOptions), "{ ", " }");
}

// Empty collections are written as `{}` and `[]`, like scalars.
function isNonEmptyCollection(value: unknown): value is object {
  return Array.isArray(value) ? value.length > 0 : isPlainObject(value) && Object.keys(value).length > 0;
}

function renderBlock(value: object, column: number, layout: Layout): string {
  const lines = Array.isArray(value)
    ? value.map((item: unknown) => renderItem(item, column, layout))
    : Object.entries(value).map(([key, item]) => renderPair(key, item, column, layout));
  return lines.join("\n");
}

function renderKey(key: string): string {
  const text = new Document({ [key]: 0 }, documentOptions).toString(toStringOptions);
  const keyText = text.slice(0, -": 0\n".length);
  // A key yaml would write as an explicit `? key` is written as a JSON string, which YAML reads too.
  return text.endsWith(": 0\n") && !keyText.includes("\n") ? keyText : JSON.stringify(key);
}

function renderScalarAfter(
  value: unknown,
  place: BlockPlace,
  layout: Layout,
  scalarType?: Scalar.Type,
): string {
  const document = new Document(place.kind === "pair" ? { k: value } : [value], documentOptions);
  keepStyle(document.get(place.kind === "pair" ? "k" : 0, true), scalarType);
  let text = document.toString({ ...toStringOptions, indent: layout.indent });
  // yaml writes a block scalar's indentation indicator (`|2-`, for text that starts with a space)
  // as if the indentation were 2, so such a scalar is written with 2.
  if (/^\S+:? [|>][-+]?\d/.test(text)) text = document.toString({ ...toStringOptions, indent: 2 });
  const indicator = place.kind === "pair" ? "k:" : "-";
  if (!text.startsWith(indicator) || !text.endsWith("\n")) {
    throw new Error(`unexpected rendering of a scalar: ${JSON.stringify(text)}`);
  }
  return indentContinuation(text.slice(indicator.length, -1), place.column);
}

// A string keeps the quoting or block style it had. Plain is left to yaml, which quotes when it
// must: forcing it would let yaml write a multi-line string as a folded plain scalar. An empty
// block scalar reads badly, so "" is left to yaml too.
function keepStyle(node: unknown, scalarType: Scalar.Type | undefined): void {
  if (!scalarType || scalarType === "PLAIN" || !isScalar(node) || typeof node.value !== "string") return;
  if (node.value !== "" || scalarType === "QUOTE_DOUBLE" || scalarType === "QUOTE_SINGLE") {
    node.type = scalarType;
  }
}

function unwrapFlow(document: Document, open: string, close: string): string {
  visit(document, {
    Scalar(_key, node) {
      // In flow context yaml writes a multi-line string across lines; a double-quoted one stays on one.
      if (typeof node.value === "string" && node.value.includes("\n")) node.type = "QUOTE_DOUBLE";
    },
    Collection(_key, node) {
      node.flow = true;
    },
  });
  const text = document.toString(toStringOptions);
  const inner = text.slice(open.length, -close.length - 1);
  if (!text.startsWith(open) || !text.endsWith(`${close}\n`) || inner.includes("\n")) {
    throw new Error(`unexpected flow rendering: ${JSON.stringify(text)}`);
  }
  return inner;
}
