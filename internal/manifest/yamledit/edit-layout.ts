// A file's indentation habits, read from its own nested blocks, so text the editor inserts looks
// like the text around it.
import { isMap, isScalar, isSeq, type Document } from "yaml";
import { columnOf } from "./edit-text.ts";

/** How far a nested map is indented under its key, and how far a sequence is (0: not at all). */
export interface Layout {
  indent: number;
  seqIndent: number;
}

/** yaml's own defaults, which toStableYaml writes: used when a file has no nested blocks to read. */
export const defaultLayout: Layout = { indent: 2, seqIndent: 2 };

/** The layout of the first nested block map and block sequence found under a key. */
export function detectLayout(source: string, documents: readonly Document[]): Layout {
  let indent: number | undefined;
  let seqIndent: number | undefined;
  const walk = (node: unknown): void => {
    if (isSeq(node)) node.items.forEach(walk);
    if (!isMap(node)) return;
    for (const pair of node.items) {
      const { key, value } = pair;
      if (!node.flow && isScalar(key) && key.range && (isMap(value) || isSeq(value)) && !value.flow) {
        const keyColumn = columnOf(source, key.range[0]);
        const first: unknown = isMap(value) ? value.items[0]?.key : value;
        const start = isScalar(first) || isSeq(first) ? first.range?.[0] : undefined;
        const offset = start === undefined ? undefined : columnOf(source, start) - keyColumn;
        if (isMap(value) && offset !== undefined && offset > 0) indent ??= offset;
        if (isSeq(value) && offset !== undefined && offset >= 0) seqIndent ??= offset;
      }
      walk(value);
    }
  };
  documents.forEach((document) => walk(document.contents));
  const resolved = indent ?? defaultLayout.indent;
  return { indent: resolved, seqIndent: seqIndent ?? resolved };
}
