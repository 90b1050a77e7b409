// Replacing one value in place: a scalar keeps its style where the new value allows, anything
// else is re-rendered at its position. Shared by the collection planners.
import { isNode, isScalar, type Document, type Scalar } from "yaml";
import type { Layout } from "./edit-layout.ts";
import { renderAfterIndicator, renderFlow, renderRoot } from "./edit-render.ts";
import { blank, newlineAt, UnsafeEdit, type Splice } from "./edit-text.ts";

/** Where a node sits, which decides how a replacement is written. */
export type Place =
  | { kind: "root" }
  | { kind: "flow" }
  /** After a block `key:` or `-` at `column`; the indicator ends at `indicatorEnd`. */
  | { kind: "pair" | "item"; column: number; indicatorEnd: number };

/** What planning one document needs; `plan` is how collection planners recurse. */
export interface PlanContext {
  source: string;
  document: Document;
  layout: Layout;
  plan(node: unknown, desired: unknown, place: Place): Splice[];
}

/** The source range a parsed node's value covers (its props and trailing comments excluded). */
export function rangeOf(node: unknown): [number, number] {
  if (!isNode(node) || !node.range) throw new UnsafeEdit("a value without a source range");
  return [node.range[0], node.range[1]];
}

/** Rewrites a scalar as `desired`, a scalar: a string keeps the old string's quoting or block style. */
export function replaceScalar(context: PlanContext, node: Scalar, desired: unknown, place: Place): Splice {
  const { source, layout } = context;
  const [start, end] = rangeOf(node);
  const style = typeof desired === "string" && typeof node.value === "string" ? node.type : undefined;
  if (place.kind === "flow") return { start, end, text: renderFlow(desired, style) };
  if (place.kind === "root") return replaceWhole(context, node, desired, place);
  const text = afterFirstLine(
    renderAfterIndicator(desired, place, layout, style),
    headerComment(source, node),
  );
  // An empty scalar (a bare `key:`) has no text to overwrite: the value goes after the indicator.
  if (start === end) return spliceValue(source, place.indicatorEnd, place.indicatorEnd, text);
  return spliceValue(source, start, end, text.slice(1));
}

/** Rewrites any value as `desired`, in the layout of the file, at the node's position. */
export function replaceWhole(context: PlanContext, node: unknown, desired: unknown, place: Place): Splice {
  const { source, layout } = context;
  const [start, end] = rangeOf(node);
  if (place.kind === "flow") return { start, end, text: renderFlow(desired) };
  const comment = headerComment(source, node);
  if (place.kind === "root") {
    return spliceValue(source, start, end, afterFirstLine(renderRoot(desired, layout).slice(0, -1), comment));
  }
  let from = place.indicatorEnd;
  let text = afterFirstLine(renderAfterIndicator(desired, place, layout), comment);
  const lineEnd = newlineAt(source, from);
  const rest = source.slice(from, lineEnd);
  // The old value began on a later line, so what trails `key:` is a comment about it: keep it.
  if (lineEnd < start && /^[ \t]*(#.*)?$/.test(rest)) {
    if (text.startsWith("\n")) from = lineEnd;
    else text = afterFirstLine(text, rest);
  }
  return spliceValue(source, from, end, text);
}

/**
 * Replaces source[from, end) with `text` (which has no final newline). A block value's text
 * ended with its newline, so the new text does too. A comment that trailed a one-line value
 * moves up onto the first line of a multi-line one, where it cannot become part of a block.
 */
function spliceValue(source: string, from: number, end: number, text: string): Splice {
  const old = source.slice(from, end);
  if (old.endsWith("\n")) return { start: from, end, text: `${text}\n` };
  const lineEnd = newlineAt(source, end);
  const rest = source.slice(end, lineEnd);
  if (text.includes("\n") && !blank(rest)) {
    return { start: from, end: lineEnd, text: afterFirstLine(text, rest) };
  }
  return { start: from, end, text };
}

// The comment on a block scalar's header line (`key: | # about it`), which its range covers.
function headerComment(source: string, node: unknown): string {
  if (!isScalar(node) || (node.type !== "BLOCK_LITERAL" && node.type !== "BLOCK_FOLDED")) return "";
  const start = rangeOf(node)[0];
  return /^[|>][-+\d]*([ \t]+#.*)$/.exec(source.slice(start, newlineAt(source, start)))?.[1] ?? "";
}

function afterFirstLine(text: string, insert: string): string {
  const newline = text.indexOf("\n");
  return newline < 0 ? text + insert : text.slice(0, newline) + insert + text.slice(newline);
}
