// The fallback when a splice is not safe: patch the document's nodes to the desired values and
// let yaml write the document again. Comments on nodes that stay are kept; the layout is yaml's.
import {
  isAlias,
  isCollection,
  isMap,
  isNode,
  isScalar,
  isSeq,
  type Document,
  type Node,
  type YAMLMap,
  type YAMLSeq,
} from "yaml";
import { isPlainObject, jsonEqual } from "./edit-json.ts";
import type { Layout } from "./edit-layout.ts";
import { keyString } from "./edit-plan-block.ts";

// A manifest spells out every value: a sub-object met twice is written twice, never aliased.
const createOptions = { aliasDuplicateObjects: false } as const;

/** `document` re-rendered after patching its nodes to equal `desired`; mutates `document`. */
export function rerenderDocument(document: Document, desired: unknown, layout: Layout): string {
  document.contents = patchNode(document, document.contents, desired);
  // lineWidth 0: never fold a long string across lines.
  return document.toString({ lineWidth: 0, indent: layout.indent, indentSeq: layout.seqIndent > 0 });
}

function patchNode(document: Document, node: unknown, desired: unknown): Node {
  if (isNode(node) && jsonEqual(valueOf(document, node), desired)) return node;
  if (isMap(node) && isPlainObject(desired)) return patchMap(document, node, desired);
  if (isSeq(node) && Array.isArray(desired)) return patchSeq(document, node, desired);
  const fresh = document.createNode(desired, createOptions);
  if (isNode(node)) carryOver(node, fresh, desired);
  return fresh;
}

function patchMap(document: Document, map: YAMLMap, desired: Record<string, unknown>): YAMLMap {
  const keyOf = (key: unknown) => (isScalar(key) ? keyString(key) : undefined);
  map.items = map.items.filter((pair) => {
    const key = keyOf(pair.key);
    return key !== undefined && Object.hasOwn(desired, key);
  });
  // In document order, so an anchor is patched before the aliases that read it are compared.
  for (const pair of map.items) pair.value = patchNode(document, pair.value, desired[keyOf(pair.key) ?? ""]);
  const known = new Set(map.items.map((pair) => keyOf(pair.key)));
  for (const [key, value] of Object.entries(desired)) {
    if (!known.has(key)) map.items.push(document.createPair(key, value, createOptions));
  }
  return map;
}

function patchSeq(document: Document, seq: YAMLSeq, desired: unknown[]): YAMLSeq {
  seq.items = desired.map((value, i) =>
    i < seq.items.length
      ? patchNode(document, seq.items[i], value)
      : document.createNode(value, createOptions),
  );
  return seq;
}

// An alias whose anchor was patched away no longer resolves: it equals nothing.
function valueOf(document: Document, node: Node): unknown {
  try {
    return node.toJS(document);
  } catch {
    return undefined;
  }
}

// The new node takes the old one's comments, blank line, anchor, and for strings its quoting.
function carryOver(old: Node, fresh: Node, desired: unknown): void {
  fresh.commentBefore = old.commentBefore;
  fresh.comment = old.comment;
  fresh.spaceBefore = old.spaceBefore;
  if (!isAlias(old) && !isAlias(fresh) && old.anchor) fresh.anchor = old.anchor;
  if (isScalar(old) && isScalar(fresh) && typeof old.value === "string" && typeof desired === "string") {
    fresh.type = old.type;
  }
  if (isCollection(old) && isCollection(fresh)) fresh.flow = old.flow;
}
