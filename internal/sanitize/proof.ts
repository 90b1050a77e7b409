// The proof that an unowned value is the API server's default: a server-side dry-run create of
// the object without any unowned value, whose answer holds what the API server fills in
// (defaulting, a CRD schema's defaults, mutating admission). An unowned value the answer holds
// at the same place, equal, would be put back by applying the document without it; it is left
// out. Any other one (a Secret's data written as stringData, a value whose ownership was reset)
// is kept. These are the pure parts: the request's body, what the answer proves, and the key a
// proof is shared under by objects of the same kind and shape.
import { isDeepStrictEqual } from "node:util";
import { canonicalDigest, canonicalJson } from "./digest.ts";
import type { DefaultVerdict, FieldPath, Unowned } from "./owned.ts";
import { settle, type KubeObject, type Unsettled } from "./sanitize.ts";

/** Every unowned value is taken for a default: what the dry-run is sent, so it fills them in. */
const everyUnowned: DefaultVerdict = () => true;

/**
 * What the dry-run creates: the object without any unowned value, under a name the server
 * generates from the object's own (the object itself exists, so its name is taken).
 */
export function dryRunBody(object: Unsettled): KubeObject {
  const body = settle(object, everyUnowned).object;
  const { name, ...metadata } = body.metadata ?? {};
  const prefix = (name ?? "").slice(0, 40).replace(/[^a-z0-9]+$/, "");
  body.metadata = { ...metadata, generateName: `${prefix || "proof"}-` };
  return body;
}

/**
 * The unowned values of `object` that `answer` (the dry-run's object) holds, equal, at the same
 * place, as path keys (`pathKey`). A list item no manager owns is proven when the answer's list
 * holds more items equal to it than the object's owned items do.
 */
export function provenDefaults(object: Unsettled, answer: unknown): Set<string> {
  const proven = new Set<string>();
  if (object.unowned) walk(object.stripped, object.unowned, answer, [], proven);
  return proven;
}

/** The verdict a set of proven path keys gives. */
export function verdictOf(proven: ReadonlySet<string>): DefaultVerdict {
  return (path) => proven.has(pathKey(path));
}

export function pathKey(path: FieldPath): string {
  return JSON.stringify(path);
}

function walk(live: unknown, unowned: Unowned, answer: unknown, path: FieldPath, proven: Set<string>): void {
  if (Array.isArray(live)) {
    walkList(live, unowned, Array.isArray(answer) ? answer : [], path, proven);
    return;
  }
  if (!isRecord(live)) return;
  const answered = isRecord(answer) ? answer : {};
  for (const [key, value] of Object.entries(unowned.values ?? {})) {
    if (Object.hasOwn(answered, key) && isDeepStrictEqual(answered[key], value))
      proven.add(pathKey([...path, key]));
  }
  for (const [key, inner] of Object.entries(unowned.inside ?? {})) {
    walk(live[key], inner, answered[key], [...path, key], proven);
  }
}

function walkList(
  live: readonly unknown[],
  unowned: Unowned,
  answer: readonly unknown[],
  path: FieldPath,
  proven: Set<string>,
): void {
  const items = unowned.items ?? {};
  const owned = live.filter((_, index) => !Object.hasOwn(items, String(index)));
  const count = (list: readonly unknown[], item: unknown) =>
    list.filter((x) => isDeepStrictEqual(x, item)).length;
  for (const [index, item] of Object.entries(items)) {
    if (count(answer, item) > count(owned, item)) proven.add(pathKey([...path, Number(index)]));
  }
  // The dry-run was sent the owned items only, so a live item's place there is its place among them.
  for (const [index, inner] of Object.entries(unowned.inside ?? {})) {
    const at = Number(index);
    const sent = live.slice(0, at).filter((_, i) => !Object.hasOwn(items, String(i))).length;
    walk(live[at], inner, answer[sent], [...path, at], proven);
  }
}

/**
 * The key a proof is shared under: the object's apiVersion, kind and namespace, its unowned
 * values, and its shape. Defaulting reads the fields beside the one it fills (an image's tag
 * for imagePullPolicy, a port for targetPort) and the flags and numbers above it, so the shape
 * keeps every number, boolean and null, and every string in a map or list that holds an
 * unowned value; other strings (names, labels, most of a spec) are the same in every shape.
 * Objects that differ only there share one dry-run. The key is a digest: it holds no value.
 */
export function proofKey(object: Unsettled): string {
  const { stripped, unowned } = object;
  const { name: _name, ...metadata } = stripped.metadata ?? {};
  const shape = shapeOf({ ...stripped, metadata }, unowned);
  return canonicalDigest(
    canonicalJson([stripped.apiVersion, stripped.kind, stripped.metadata?.namespace ?? "", unowned, shape]),
  );
}

const someString = "\u0000";

function shapeOf(value: unknown, unowned: Unowned | undefined): unknown {
  const holdsUnowned = unowned !== undefined && (unowned.values !== undefined || unowned.items !== undefined);
  if (Array.isArray(value)) {
    return value.map((item, index) => member(item, unowned?.inside?.[String(index)], holdsUnowned));
  }
  if (!isRecord(value)) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, child]) => [key, member(child, unowned?.inside?.[key], holdsUnowned)]),
  );
}

function member(value: unknown, unowned: Unowned | undefined, besideUnowned: boolean): unknown {
  if (typeof value === "string") return besideUnowned ? value : someString;
  return shapeOf(value, unowned);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
