// A digest of a JSON value's content: equal values give equal digests whatever order their
// keys came in, and nothing else is kept of the value. Cheaper by far than a digest of rendered
// YAML: the watch takes one per event, and the inventory one per document it reads.
import { createHash } from "node:crypto";

/** `value` as JSON with every object's keys sorted; undefined members are left out, as JSON does. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value))
    return `[${value.map((v) => (v === undefined ? "null" : canonicalJson(v))).join(",")}]`;
  const members = Object.keys(value)
    .sort()
    .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
    .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
  return `{${members.join(",")}}`;
}

/** The content digest of `value`: base64 SHA-256 of its canonical JSON. */
export function contentDigest(value: unknown): string {
  return canonicalDigest(canonicalJson(value));
}

/** The content digest of a value already rendered by canonicalJson. */
export function canonicalDigest(canonical: string): string {
  return createHash("sha256").update(canonical).digest("base64");
}
