// Patching flow collections (`{a: 1}`, `["--a", "--b"]`) in place, entry by entry, so they stay
// flow collections on the lines they were on.
import { isScalar, type YAMLMap, type YAMLSeq } from "yaml";
import { keyString, quoteStyleOf, removedRuns } from "./edit-plan-block.ts";
import { renderFlow, renderFlowPair } from "./edit-render.ts";
import { rangeOf, replaceWhole, type Place, type PlanContext } from "./edit-replace.ts";
import { UnsafeEdit, type Splice } from "./edit-text.ts";

const flow: Place = { kind: "flow" };

/** Patches a flow map: kept keys in place, removed ones with their comma, new ones last. */
export function planFlowMap(
  context: PlanContext,
  map: YAMLMap,
  desired: Record<string, unknown>,
  place: Place,
): Splice[] {
  if (Object.keys(desired).length === 0) return [replaceWhole(context, map, desired, place)];
  const entries = map.items.map((pair) => {
    if (!isScalar(pair.key)) throw new UnsafeEdit("a map key that is not a scalar");
    return {
      key: keyString(pair.key),
      keyStart: rangeOf(pair.key)[0],
      value: pair.value,
      end: rangeOf(pair.value)[1],
    };
  });
  const kept = entries.map((entry) => Object.hasOwn(desired, entry.key));
  const known = new Set(entries.map((entry) => entry.key));
  const added = Object.keys(desired)
    .filter((key) => !known.has(key))
    .map((key) => renderFlowPair(key, desired[key]));
  const first = entries[0];
  const last = entries.at(-1);
  if (!first || !last || !kept.includes(true)) {
    // Nothing stays: the new entries take the place of the old ones, inside the same braces.
    const start = first ? first.keyStart : openerEnd(context.source, map);
    return [{ start, end: last ? last.end : start, text: added.join(", ") }];
  }
  const splices = entries.flatMap((entry, i) =>
    kept[i] ? context.plan(entry.value, desired[entry.key], flow) : [],
  );
  for (const [i, j] of removedRuns(kept)) {
    const previous = entries[i - 1];
    const next = entries[j + 1];
    // A removed entry takes the comma before it, or, when it is first, the comma after it.
    if (previous) splices.push({ start: previous.end, end: entries[j]!.end, text: "" });
    else if (next) splices.push({ start: first.keyStart, end: next.keyStart, text: "" });
  }
  if (added.length > 0) splices.push({ start: last.end, end: last.end, text: `, ${added.join(", ")}` });
  return splices;
}

/** Patches a flow sequence by index: common items in place, then the tail appended or removed. */
export function planFlowSeq(context: PlanContext, seq: YAMLSeq, desired: unknown[], place: Place): Splice[] {
  if (desired.length === 0) return [replaceWhole(context, seq, desired, place)];
  const common = Math.min(seq.items.length, desired.length);
  const splices = seq.items.slice(0, common).flatMap((item, i) => context.plan(item, desired[i], flow));
  const last = seq.items.at(-1);
  const style = quoteStyleOf(last);
  const added = desired.slice(seq.items.length).map((item) => renderFlow(item, style));
  if (last === undefined) {
    const start = openerEnd(context.source, seq);
    splices.push({ start, end: start, text: added.join(", ") });
  } else if (added.length > 0) {
    const end = rangeOf(last)[1];
    splices.push({ start: end, end, text: `, ${added.join(", ")}` });
  } else if (desired.length < seq.items.length) {
    splices.push({ start: rangeOf(seq.items[common - 1])[1], end: rangeOf(last)[1], text: "" });
  }
  return splices;
}

// Just past the `{` or `[` that opens a flow collection.
function openerEnd(source: string, collection: YAMLMap | YAMLSeq): number {
  const start = rangeOf(collection)[0];
  if (source[start] !== "{" && source[start] !== "[") {
    throw new UnsafeEdit("a flow collection without its bracket");
  }
  return start + 1;
}
