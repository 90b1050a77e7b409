// Client-side apply (`kubectl apply` without --server-side, and Argo CD unless a sync says
// ServerSideApply=true) writes with Update operations, and an Update owns the defaults too:
// built-in types are defaulted as the request is decoded, before field management sees it. So
// its managedFields entry cannot tell what the manifest set from what the API server filled in.
// It does keep its own input, whole, in the last-applied annotation. The manager that owns that
// annotation set what the annotation holds; the rest of its entry is defaults.
import { isDeepStrictEqual } from "node:util";
import type { FieldSet } from "./fieldset.ts";

export const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration";

const ownsLastApplied = (set: FieldSet) =>
  Object.hasOwn(set["f:metadata"]?.["f:annotations"] ?? {}, `f:${lastAppliedAnnotation}`);

/**
 * The field sets of `entries` (FieldsV1 managedFields entries), each Update entry that wrote
 * `lastApplied` (the annotation's text) narrowed to the fields that input holds. An annotation
 * that is not JSON narrows nothing.
 */
export function narrowToLastApplied(
  entries: readonly { operation?: unknown; set: FieldSet }[],
  lastApplied: string | undefined,
): FieldSet[] {
  const input = parsed(lastApplied);
  return entries.map(({ operation, set }) =>
    input !== undefined && operation === "Update" && ownsLastApplied(set) ? within(set, input) : set,
  );
}

function parsed(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return isRecord(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** The part of `set` that `value` (the manifest's value at the same place) holds. */
function within(set: FieldSet, value: unknown): FieldSet {
  const kept: Record<string, FieldSet> = {};
  for (const [member, inner] of Object.entries(set)) {
    if (member === ".") {
      kept[member] = inner;
      continue;
    }
    const found = counterpart(member, value);
    if (!found.present) continue;
    const narrowed = Object.keys(inner).length === 0 ? inner : within(inner, found.value);
    // A set with members that keeps none would read as owning the value whole.
    if (Object.keys(inner).length > 0 && Object.keys(narrowed).length === 0) continue;
    kept[member] = narrowed;
  }
  return kept;
}

type Counterpart = { present: false } | { present: true; value: unknown };

const absent: Counterpart = { present: false };

function counterpart(member: string, value: unknown): Counterpart {
  const kind = member.slice(0, 2);
  const rest = member.slice(2);
  if (kind === "f:") {
    return isRecord(value) && Object.hasOwn(value, rest) ? { present: true, value: value[rest] } : absent;
  }
  if (!Array.isArray(value)) return absent;
  if (kind === "i:") {
    const index = Number(rest);
    return index < value.length ? { present: true, value: value[index] } : absent;
  }
  let key: unknown;
  try {
    key = JSON.parse(rest);
  } catch {
    return absent;
  }
  if (kind === "v:")
    return value.some((item) => isDeepStrictEqual(item, key)) ? { present: true, value: key } : absent;
  if (kind !== "k:" || !isRecord(key)) return absent;
  const item = itemByKey(value, key);
  return item === undefined ? absent : { present: true, value: item };
}

// A key's fields can be defaulted too (a port's protocol: TCP), and then the manifest's item
// lacks them: an item that states every key field is taken first, else one that states some and
// contradicts none.
function itemByKey(items: readonly unknown[], key: Record<string, unknown>): unknown {
  const fields = Object.entries(key);
  const records = items.filter(isRecord);
  const exact = records.find((item) => fields.every(([f, v]) => isDeepStrictEqual(item[f], v)));
  if (exact) return exact;
  return records.find(
    (item) =>
      fields.some(([f]) => Object.hasOwn(item, f)) &&
      fields.every(([f, v]) => !Object.hasOwn(item, f) || isDeepStrictEqual(item[f], v)),
  );
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
