// Lists a new file in a kustomization's resources, in the same commit that adds the file. The
// kustomization is a file people wrote and review, so the edit is one added line wherever the
// source allows it, and a re-render through the yaml Document API (comments kept) only when the
// list is written inline or is missing. Either way the result is re-parsed and must differ from
// the original by the one entry alone.
import { isDeepStrictEqual } from "node:util";
import { yamlOptions } from "../sanitize/yamlstrings.ts";
import { isMap, isNode, isScalar, isSeq, parseDocument, stringify, type Document, type YAMLMap } from "yaml";

// kustomize reads YAML with a Go library that follows YAML 1.1, so an entry such as "on" or
// "yes" must be quoted to stay a string there (yamlOptions).

/** Returns the kustomization's source with `entry` added to its resources: list (created if absent), comments, order and formatting kept; the same string when the entry is already listed. */
export function addResourceEntry(kustomizationSource: string, entry: string): string {
  const document = parseDocument(kustomizationSource, yamlOptions);
  const root = document.contents;
  if (document.errors.length > 0 || !isMap(root)) {
    throw new Error("the kustomization is not a YAML map, so no resources entry can be added to it");
  }
  const resources = root.get("resources", true);
  if (isSeq(resources) && resources.items.some((item) => isScalar(item) && item.value === entry)) {
    return kustomizationSource;
  }
  if (resources !== undefined && !isSeq(resources) && !(isScalar(resources) && resources.value === null)) {
    throw new Error("the kustomization's resources is not a list, so no entry can be added to it");
  }
  const expected = withEntry(document.toJS() as Record<string, unknown>, entry);
  const spliced = spliceEntry(kustomizationSource, root, entry);
  if (spliced !== undefined && parsesTo(spliced, expected)) return spliced;
  const rewritten = rewriteWithEntry(document, root, entry, kustomizationSource);
  if (parsesTo(rewritten, expected)) return rewritten;
  throw new Error(`adding ${entry} to the kustomization's resources would change more than that list`);
}

function withEntry(kustomization: Record<string, unknown>, entry: string): Record<string, unknown> {
  const listed: unknown[] = Array.isArray(kustomization.resources) ? kustomization.resources : [];
  return { ...kustomization, resources: [...listed, entry] };
}

function parsesTo(source: string, expected: Record<string, unknown>): boolean {
  const document = parseDocument(source, yamlOptions);
  return document.errors.length === 0 && isDeepStrictEqual(document.toJS(), expected);
}

// One line inserted into the source: after the last item of a block list, or a new block list
// after the last line of a block map that starts at column 0. Undefined where the layout is
// anything else, and the Document API renders the change instead.
function spliceEntry(source: string, root: YAMLMap, entry: string): string | undefined {
  const resources = root.get("resources", true);
  const item = scalarText(entry);
  if (isSeq(resources)) {
    const last = resources.items.at(-1);
    if (resources.flow || !isNode(last) || !last.range) return undefined;
    const prefix = itemPrefix(source, last.range[0]);
    return prefix === undefined ? undefined : insertAfterLine(source, last.range[1], [`${prefix}${item}`]);
  }
  if (
    resources !== undefined ||
    root.flow ||
    !root.range ||
    lineStart(source, root.range[0]) !== root.range[0]
  ) {
    return undefined;
  }
  return insertAfterLine(source, root.range[1], ["resources:", `${sequencePrefix(source, root)}${item}`]);
}

function rewriteWithEntry(document: Document, root: YAMLMap, entry: string, source: string): string {
  const resources = root.get("resources", true);
  if (isSeq(resources)) resources.add(document.createNode(entry));
  else root.set("resources", document.createNode([entry]));
  // Indent every list the way the file already does, so the re-render moves as little as it can.
  return document.toString({ lineWidth: 0, indentSeq: sequencePrefix(source, root) !== "- " });
}

function scalarText(entry: string): string {
  return stringify(entry, { ...yamlOptions, lineWidth: 0 }).replace(/\n$/, "");
}

// The "  - " before an item, to repeat for the new one; undefined when the line holds more.
function itemPrefix(source: string, itemStart: number): string | undefined {
  const prefix = source.slice(lineStart(source, itemStart), itemStart);
  return /^ *- +$/.test(prefix) ? prefix : undefined;
}

// How the file's other top-level block lists are indented, or kustomize's own "- " when it has none.
function sequencePrefix(source: string, root: YAMLMap): string {
  for (const pair of root.items) {
    const first: unknown = isSeq(pair.value) && !pair.value.flow ? pair.value.items[0] : undefined;
    const prefix = isNode(first) && first.range ? itemPrefix(source, first.range[0]) : undefined;
    if (prefix !== undefined) return prefix;
  }
  return "- ";
}

function lineStart(source: string, offset: number): number {
  return source.lastIndexOf("\n", offset - 1) + 1;
}

// Inserts `lines` after the line holding the character just before `end`, with that line's own
// line ending (a trailing comment on it stays where it is).
function insertAfterLine(source: string, end: number, lines: string[]): string {
  const newline = source.indexOf("\n", Math.max(end - 1, 0));
  if (newline < 0) return `${source}\n${lines.join("\n")}`;
  const eol = source[newline - 1] === "\r" ? "\r\n" : "\n";
  const at = newline + 1;
  return `${source.slice(0, at)}${lines.map((line) => `${line}${eol}`).join("")}${source.slice(at)}`;
}

/**
 * Returns the kustomization's source without `entry` in its resources: list, when the file it
 * named is gone; the line is cut where the source allows it, and the same string comes back when
 * the entry is not listed.
 */
export function removeResourceEntry(kustomizationSource: string, entry: string): string {
  const document = parseDocument(kustomizationSource, yamlOptions);
  const root = document.contents;
  const resources = isMap(root) ? root.get("resources", true) : undefined;
  if (document.errors.length > 0 || !isSeq(resources)) return kustomizationSource;
  const index = resources.items.findIndex((item) => isScalar(item) && item.value === entry);
  if (index < 0) return kustomizationSource;
  const kept = (document.toJS() as { resources: unknown[] }).resources.filter((_, i) => i !== index);
  const expected = { ...(document.toJS() as Record<string, unknown>), resources: kept };
  const item = resources.items[index];
  if (
    !resources.flow &&
    isNode(item) &&
    item.range &&
    itemPrefix(kustomizationSource, item.range[0]) !== undefined
  ) {
    const start = lineStart(kustomizationSource, item.range[0]);
    const newline = kustomizationSource.indexOf("\n", item.range[1] - 1);
    const cut = `${kustomizationSource.slice(0, start)}${newline < 0 ? "" : kustomizationSource.slice(newline + 1)}`;
    if (parsesTo(cut, expected)) return cut;
  }
  resources.delete(index);
  const rewritten = document.toString({ lineWidth: 0 });
  if (parsesTo(rewritten, expected)) return rewritten;
  throw new Error(`removing ${entry} from the kustomization's resources would change more than that list`);
}
