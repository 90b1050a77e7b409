// Patching block maps and block sequences in place: entries that stay are patched where they
// are, removed ones take their own lines with them, new ones go after the last, at the
// collection's column.
import { isScalar, type Pair, type Scalar, type YAMLMap, type YAMLSeq } from "yaml";
import { renderItem, renderPair } from "./edit-render.ts";
import { rangeOf, replaceWhole, type Place, type PlanContext } from "./edit-replace.ts";
import {
  columnOf,
  lineEndAfter,
  lineStart,
  ownedStart,
  startsLine,
  UnsafeEdit,
  type Splice,
} from "./edit-text.ts";

interface Entry {
  key: string;
  keyStart: number;
  /** Just past the entry's `:`. */
  indicatorEnd: number;
  value: unknown;
  valueEnd: number;
}

/** Patches a block map: its key order is kept, removed keys lose their lines, new keys go last. */
export function planBlockMap(
  context: PlanContext,
  map: YAMLMap,
  desired: Record<string, unknown>,
  place: Place,
): Splice[] {
  const { source, layout } = context;
  const entries = map.items.map((pair) => blockEntry(source, pair));
  const kept = entries.map((entry) => Object.hasOwn(desired, entry.key));
  const first = entries[0];
  const last = entries.at(-1);
  if (!first || !last || !kept.includes(true)) return [replaceWhole(context, map, desired, place)];
  const column = columnOf(source, first.keyStart);
  const splices = entries.flatMap((entry, i) =>
    kept[i]
      ? context.plan(entry.value, desired[entry.key], {
          kind: "pair",
          column,
          indicatorEnd: entry.indicatorEnd,
        })
      : [],
  );
  for (const [i, j] of removedRuns(kept)) splices.push(removeEntries(source, entries, i, j, place));
  const known = new Set(entries.map((entry) => entry.key));
  const added = Object.keys(desired).filter((key) => !known.has(key));
  if (added.length > 0) {
    const text = added.map((key) => renderPair(key, desired[key], column, layout)).join("\n");
    splices.push(insertLines(source, last.valueEnd, text));
  }
  return splices;
}

/** Patches a block sequence by index: common items in place, then the tail appended or removed. */
export function planBlockSeq(context: PlanContext, seq: YAMLSeq, desired: unknown[], place: Place): Splice[] {
  const { source, layout } = context;
  const dashes = dashOffsets(seq);
  const last = seq.items.at(-1);
  if (desired.length === 0 || dashes[0] === undefined || last === undefined) {
    return [replaceWhole(context, seq, desired, place)];
  }
  const column = columnOf(source, dashes[0]);
  const common = Math.min(seq.items.length, desired.length);
  const splices = seq.items
    .slice(0, common)
    .flatMap((item, i) =>
      context.plan(item, desired[i], { kind: "item", column, indicatorEnd: (dashes[i] ?? 0) + 1 }),
    );
  const lastEnd = rangeOf(last)[1];
  if (desired.length > seq.items.length) {
    const style = quoteStyleOf(last);
    const text = desired
      .slice(seq.items.length)
      .map((item) => renderItem(item, column, layout, style))
      .join("\n");
    splices.push(insertLines(source, lastEnd, text));
  } else if (desired.length < seq.items.length) {
    const firstRemoved = dashes[common] ?? 0;
    if (!startsLine(source, firstRemoved)) throw new UnsafeEdit("a sequence item that shares its line");
    const floor = lineEndAfter(source, rangeOf(seq.items[common - 1])[1]);
    splices.push({
      start: ownedStart(source, firstRemoved, floor),
      end: lineEndAfter(source, lastEnd),
      text: "",
    });
  }
  return splices;
}

function blockEntry(source: string, pair: Pair): Entry {
  const key = pair.key;
  if (!isScalar(key)) throw new UnsafeEdit("a map key that is not a scalar");
  const [keyStart, keyEnd] = rangeOf(key);
  let colon = keyEnd;
  while (source[colon] === " " || source[colon] === "\t") colon++;
  // Anything but `key:` (an explicit `? key`, say) is left to the re-rendering fallback.
  if (source[colon] !== ":") throw new UnsafeEdit("a map key not followed by its colon");
  return {
    key: keyString(key),
    keyStart,
    indicatorEnd: colon + 1,
    value: pair.value,
    valueEnd: rangeOf(pair.value)[1],
  };
}

/** A key as toJS() spells it in a plain object. */
export function keyString(key: Scalar): string {
  const value: unknown = key.value;
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint") {
    return String(value);
  }
  if (value === null) return "";
  throw new UnsafeEdit("a map key that is not a string, a number or a boolean");
}

/** Maximal runs [i, j] of entries that are not kept. */
export function removedRuns(kept: readonly boolean[]): [number, number][] {
  const runs: [number, number][] = [];
  kept.forEach((keep, i) => {
    const run = runs.at(-1);
    if (keep) return;
    if (run && run[1] === i - 1) run[1] = i;
    else runs.push([i, i]);
  });
  return runs;
}

function removeEntries(source: string, entries: Entry[], i: number, j: number, place: Place): Splice {
  const first = entries[i]!;
  const end = lineEndAfter(source, entries[j]!.valueEnd);
  if (startsLine(source, first.keyStart)) {
    const previous = entries[i - 1];
    const floor = previous
      ? lineEndAfter(source, previous.valueEnd)
      : place.kind === "pair" || place.kind === "item"
        ? lineEndAfter(source, place.indicatorEnd)
        : lineStart(source, first.keyStart);
    return { start: ownedStart(source, first.keyStart, floor), end, text: "" };
  }
  // The first entry shares its line with a `- `: the next kept entry moves up onto that line.
  const next = entries[j + 1];
  if (!next) throw new UnsafeEdit("a map emptied on its sequence item's line");
  const nextStart = ownedStart(source, next.keyStart, end);
  return { start: first.keyStart, end: nextStart + columnOf(source, next.keyStart), text: "" };
}

function dashOffsets(seq: YAMLSeq): number[] {
  const token = seq.srcToken;
  if (token?.type !== "block-seq") throw new UnsafeEdit("a block sequence without its source tokens");
  // Comment lines after the last item are an item of their own in the CST, without a dash.
  const dashes = token.items.flatMap((item) => item.start.filter((t) => t.type === "seq-item-ind"));
  if (dashes.length !== seq.items.length) {
    throw new UnsafeEdit("sequence items that do not match their dashes");
  }
  return dashes.map((dash) => dash.offset);
}

/** How new strings after `item` are quoted: like `item`, when it is a quoted string. */
export function quoteStyleOf(item: unknown): Scalar.Type | undefined {
  const quoted = isScalar(item) && (item.type === "QUOTE_DOUBLE" || item.type === "QUOTE_SINGLE");
  return quoted && typeof item.value === "string" ? item.type : undefined;
}

// Inserts whole lines after the line where `valueEnd` is (the source ends with a line break).
function insertLines(source: string, valueEnd: number, text: string): Splice {
  const at = lineEndAfter(source, valueEnd);
  return { start: at, end: at, text: `${text}\n` };
}
