// What clients set, told from what the API server defaulted. A field some field manager owns in
// metadata.managedFields was written by a client; a field nobody owns was filled in by the API
// server (imagePullPolicy, strategy, protocol: TCP...). Mirroring defaults into Git would rewrite
// every folder that already agrees with the cluster, and they are not anybody's intent: applied
// without them, the API server fills them in again. So the projection keeps only owned fields,
// and sets the defaulted ones aside, with their live values, for the writer: a Git document that
// does set one keeps it, and gets its live value.
//
// managedFields is read here, once, and never kept: only the defaulted values travel on.
import { isDeepStrictEqual } from "node:util";
import { narrowToLastApplied } from "./lastapplied.ts";

/**
 * One manager's fieldsV1 set (structured-merge-diff): `f:<field>` for a map field, `k:<json>`
 * (an associative list's item by its key fields), `v:<json>` (a set's item by value) and
 * `i:<n>` (an item by index) for list items, `.` for the map or item itself. A set with no
 * members owns its value whole: a scalar, or an atomic map or list.
 */
export type FieldSet = { readonly [member: string]: FieldSet };

/**
 * The fields of a projection no manager owns, with their live values. Lists are matched by the
 * index of the item in the projection, as the editor matches a document's items.
 */
export interface Defaulted {
  /** Map fields no manager owns, by key, with their live values. */
  values?: Record<string, unknown>;
  /** Owned maps (by key) and list items (by index) that hold defaulted fields. */
  inside?: Record<string, Defaulted>;
}

export interface OwnedSplit {
  /** The object with only the fields some manager owns, and its identity. */
  owned: Record<string, unknown>;
  /** What was left out; absent when nothing was. */
  defaulted?: Defaulted;
}

// The identity is never in managedFields, and always kept.
const identity: FieldSet = {
  "f:apiVersion": {},
  "f:kind": {},
  "f:metadata": { "f:name": {}, "f:namespace": {}, "f:generateName": {} },
};

/**
 * Splits `object` by the field sets of `managedFields` (the live object's), a client-side
 * apply's entry narrowed to its `lastApplied` input (lastapplied.ts). Without any FieldsV1 entry
 * (an object written before field management, or with it cleared) nothing can be told apart,
 * and everything is kept.
 */
export function splitOwned(
  object: Record<string, unknown>,
  managedFields: unknown,
  lastApplied?: string,
): OwnedSplit {
  const entries = Array.isArray(managedFields)
    ? managedFields.flatMap((entry: unknown) =>
        isRecord(entry) && entry.fieldsType === "FieldsV1" && isRecord(entry.fieldsV1)
          ? [{ operation: entry.operation, set: entry.fieldsV1 as FieldSet }]
          : [],
      )
    : [];
  const sets = narrowToLastApplied(entries, lastApplied);
  if (sets.length === 0) return { owned: object };
  const split = splitMap(object, [identity, ...sets]);
  return {
    owned: split.value as Record<string, unknown>,
    ...(split.defaulted ? { defaulted: split.defaulted } : {}),
  };
}

/**
 * `owned` with the defaulted values a written document sets put back: a field the document
 * states stays in it, with its live value, while one it leaves out is never added.
 */
export function keepWrittenDefaults(
  written: unknown,
  owned: unknown,
  defaulted: Defaulted | undefined,
): unknown {
  if (!defaulted) return owned;
  if (Array.isArray(owned)) {
    const items: unknown[] = [...(owned as unknown[])];
    for (const [index, inner] of Object.entries(defaulted.inside ?? {})) {
      const i = Number(index);
      items[i] = keepWrittenDefaults(Array.isArray(written) ? written[i] : undefined, items[i], inner);
    }
    return items;
  }
  if (!isRecord(owned)) return owned;
  const map = { ...owned };
  const stated = isRecord(written) ? written : {};
  for (const [key, value] of Object.entries(defaulted.values ?? {})) {
    if (Object.hasOwn(stated, key)) map[key] = value;
  }
  for (const [key, inner] of Object.entries(defaulted.inside ?? {})) {
    map[key] = keepWrittenDefaults(stated[key], map[key], inner);
  }
  return map;
}

interface Split {
  value: unknown;
  defaulted?: Defaulted;
}

function splitValue(value: unknown, sets: readonly FieldSet[]): Split {
  if (sets.some((set) => Object.keys(set).length === 0)) return { value };
  if (isRecord(value)) return splitMap(value, sets);
  if (Array.isArray(value)) return splitList(value, sets);
  return { value };
}

function splitMap(map: Record<string, unknown>, sets: readonly FieldSet[]): Split {
  const owned: Record<string, unknown> = {};
  const values: Record<string, unknown> = {};
  const inside: Record<string, Defaulted> = {};
  for (const [key, child] of Object.entries(map)) {
    const member = `f:${key}`;
    const childSets = sets.flatMap((set) => (Object.hasOwn(set, member) ? [set[member]!] : []));
    if (childSets.length === 0) {
      values[key] = child;
      continue;
    }
    const split = splitValue(child, childSets);
    owned[key] = split.value;
    if (split.defaulted) inside[key] = split.defaulted;
  }
  return { value: owned, defaulted: defaultedOf(values, inside) };
}

// An item no manager owns is left out and not set aside: a document's items are matched by
// index, so it could not be put back where the document has it.
function splitList(list: readonly unknown[], sets: readonly FieldSet[]): Split {
  const matchers = sets.flatMap(itemMatchers);
  const owned: unknown[] = [];
  const inside: Record<string, Defaulted> = {};
  list.forEach((item, index) => {
    const itemSets = matchers.filter((m) => m.matches(item, index)).map((m) => m.set);
    if (itemSets.length === 0) return;
    const split = splitValue(item, itemSets);
    if (split.defaulted) inside[String(owned.length)] = split.defaulted;
    owned.push(split.value);
  });
  return { value: owned, defaulted: defaultedOf({}, inside) };
}

interface ItemMatcher {
  matches(item: unknown, index: number): boolean;
  set: FieldSet;
}

function itemMatchers(set: FieldSet): ItemMatcher[] {
  return Object.entries(set).flatMap(([member, inner]): ItemMatcher[] => {
    const kind = member.slice(0, 2);
    const rest = member.slice(2);
    if (kind === "i:") return [{ matches: (_, index) => String(index) === rest, set: inner }];
    if (kind !== "k:" && kind !== "v:") return [];
    let parsed: unknown;
    try {
      parsed = JSON.parse(rest);
    } catch {
      return [];
    }
    if (kind === "v:") return [{ matches: (item) => isDeepStrictEqual(item, parsed), set: inner }];
    const key = isRecord(parsed) ? Object.entries(parsed) : [];
    return [
      {
        matches: (item) =>
          isRecord(item) && key.every(([field, value]) => isDeepStrictEqual(item[field], value)),
        set: inner,
      },
    ];
  });
}

function defaultedOf(
  values: Record<string, unknown>,
  inside: Record<string, Defaulted>,
): Defaulted | undefined {
  const hasValues = Object.keys(values).length > 0;
  const hasInside = Object.keys(inside).length > 0;
  if (!hasValues && !hasInside) return undefined;
  return { ...(hasValues ? { values } : {}), ...(hasInside ? { inside } : {}) };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
