// What clients set, told from what the API server defaulted. A field some field manager owns in
// metadata.managedFields was written by a client. A field nobody owns is only a candidate: the
// API server may have filled it in (imagePullPolicy, strategy, protocol: TCP...), but the same
// holds of a value it converted (a Secret's stringData, stored as data and owned as stringData),
// of an object whose managedFields were reset, and of a writer that recorded no ownership. So a
// candidate is left out of what is written only when a proof says the API server puts back the
// same value (proof.ts); every other one is kept. Mirroring defaults would rewrite every folder
// that agrees with the cluster, and they are nobody's intent; losing a value is worse.
//
// managedFields is read here, once, and never kept: only the defaulted values travel on.
import { isDeepStrictEqual } from "node:util";
import type { FieldSet } from "./fieldset.ts";
import { narrowToLastApplied } from "./lastapplied.ts";

/**
 * What no manager owns in a live object, with the live values: in a map, its fields by key; in a
 * list, its items by their index in the live list. `inside` holds the owned fields and items
 * that hold unowned parts.
 */
export interface Unowned {
  values?: Record<string, unknown>;
  items?: Record<string, unknown>;
  inside?: Record<string, Unowned>;
}

/** A place in a live object: map keys and live list indices. */
export type FieldPath = readonly (string | number)[];

/** Whether the unowned value at `path` is proven to be what the API server puts back. */
export type DefaultVerdict = (path: FieldPath) => boolean;

/** Nothing is proven: every unowned value is kept. */
export const nothingProven: DefaultVerdict = () => false;

/**
 * The fields of a projection no manager owns and that were proven defaults, with their live
 * values. Lists are matched by the index of the item in the projection, as the editor matches a
 * document's items.
 */
export interface Defaulted {
  /** Map fields no manager owns, by key, with their live values. */
  values?: Record<string, unknown>;
  /** Owned maps (by key) and list items (by index) that hold defaulted fields. */
  inside?: Record<string, Defaulted>;
}

export interface OwnedSplit {
  /** The object without the proven defaults. */
  owned: Record<string, unknown>;
  /** What was left out; absent when nothing was. */
  defaulted?: Defaulted;
}

// The identity is never in managedFields, and always owned.
const identity: FieldSet = {
  "f:apiVersion": {},
  "f:kind": {},
  "f:metadata": { "f:name": {}, "f:namespace": {}, "f:generateName": {} },
};

/**
 * What no manager owns in `object`, by the field sets of `managedFields` (the live object's), a
 * client-side apply's entry narrowed to its `lastApplied` input (lastapplied.ts). Undefined when
 * every field is owned, and when there is no FieldsV1 entry at all (an object written before
 * field management, or with it cleared): then nothing can be told apart, and everything is kept.
 */
export function unownedOf(
  object: Record<string, unknown>,
  managedFields: unknown,
  lastApplied?: string,
): Unowned | undefined {
  const entries = Array.isArray(managedFields)
    ? managedFields.flatMap((entry: unknown) =>
        isRecord(entry) && entry.fieldsType === "FieldsV1" && isRecord(entry.fieldsV1)
          ? [{ operation: entry.operation, set: entry.fieldsV1 as FieldSet }]
          : [],
      )
    : [];
  const sets = narrowToLastApplied(entries, lastApplied);
  if (sets.length === 0) return undefined;
  return unownedInMap(object, [identity, ...sets]);
}

/**
 * `object` split by `unowned`: each unowned value the verdict proves a default is left out (a
 * map field set aside in `defaulted` with its live value; a list item dropped, since the
 * editor matches items by index and could not put it back), and every other one is kept.
 */
export function splitOwned(
  object: Record<string, unknown>,
  unowned: Unowned | undefined,
  verdict: DefaultVerdict,
): OwnedSplit {
  if (!unowned) return { owned: object };
  const split = settleValue(object, unowned, [], verdict);
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

function settleValue(value: unknown, unowned: Unowned, path: FieldPath, verdict: DefaultVerdict): Split {
  if (isRecord(value)) return settleMap(value, unowned, path, verdict);
  if (Array.isArray(value)) return settleList(value, unowned, path, verdict);
  return { value };
}

function settleMap(
  map: Record<string, unknown>,
  unowned: Unowned,
  path: FieldPath,
  verdict: DefaultVerdict,
): Split {
  const owned: Record<string, unknown> = {};
  const values: Record<string, unknown> = {};
  const inside: Record<string, Defaulted> = {};
  for (const [key, child] of Object.entries(map)) {
    if (unowned.values && Object.hasOwn(unowned.values, key) && verdict([...path, key])) {
      values[key] = child;
      continue;
    }
    const within = unowned.inside?.[key];
    if (!within) {
      owned[key] = child;
      continue;
    }
    const split = settleValue(child, within, [...path, key], verdict);
    owned[key] = split.value;
    if (split.defaulted) inside[key] = split.defaulted;
  }
  return { value: owned, defaulted: defaultedOf(values, inside) };
}

function settleList(
  list: readonly unknown[],
  unowned: Unowned,
  path: FieldPath,
  verdict: DefaultVerdict,
): Split {
  const owned: unknown[] = [];
  const inside: Record<string, Defaulted> = {};
  list.forEach((item, index) => {
    if (unowned.items && Object.hasOwn(unowned.items, String(index)) && verdict([...path, index])) return;
    const within = unowned.inside?.[String(index)];
    if (!within) {
      owned.push(item);
      return;
    }
    const split = settleValue(item, within, [...path, index], verdict);
    if (split.defaulted) inside[String(owned.length)] = split.defaulted;
    owned.push(split.value);
  });
  return { value: owned, defaulted: defaultedOf({}, inside) };
}

function unownedIn(value: unknown, sets: readonly FieldSet[]): Unowned | undefined {
  if (sets.some((set) => Object.keys(set).length === 0)) return undefined;
  if (isRecord(value)) return unownedInMap(value, sets);
  if (Array.isArray(value)) return unownedInList(value, sets);
  return undefined;
}

function unownedInMap(map: Record<string, unknown>, sets: readonly FieldSet[]): Unowned | undefined {
  const values: Record<string, unknown> = {};
  const inside: Record<string, Unowned> = {};
  for (const [key, child] of Object.entries(map)) {
    const member = `f:${key}`;
    const childSets = sets.flatMap((set) => (Object.hasOwn(set, member) ? [set[member]!] : []));
    if (childSets.length === 0) {
      values[key] = child;
      continue;
    }
    const within = unownedIn(child, childSets);
    if (within) inside[key] = within;
  }
  return unownedOfParts({ values, items: {}, inside });
}

function unownedInList(list: readonly unknown[], sets: readonly FieldSet[]): Unowned | undefined {
  const matchers = sets.flatMap(itemMatchers);
  const items: Record<string, unknown> = {};
  const inside: Record<string, Unowned> = {};
  list.forEach((item, index) => {
    const itemSets = matchers.filter((m) => m.matches(item, index)).map((m) => m.set);
    if (itemSets.length === 0) {
      items[String(index)] = item;
      return;
    }
    const within = unownedIn(item, itemSets);
    if (within) inside[String(index)] = within;
  });
  return unownedOfParts({ values: {}, items, inside });
}

function unownedOfParts(parts: Record<keyof Unowned, Record<string, unknown>>): Unowned | undefined {
  const kept = Object.entries(parts).filter(([, part]) => Object.keys(part).length > 0);
  return kept.length === 0 ? undefined : Object.fromEntries(kept);
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
