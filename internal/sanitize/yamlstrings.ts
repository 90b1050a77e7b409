// Strings every YAML reader reads back the same. kubectl, kustomize, sops, Flux and Argo CD read
// YAML with Go libraries that follow YAML 1.1, where NEL (U+0085), U+2028 and U+2029 are line
// breaks, and where C0 and C1 controls, DEL, U+FFFE and U+FFFF may not appear in a file at all.
// The yaml library writes such characters as they are, plain or in quotes: kustomize then fails
// ("control characters are not allowed"), or reads another string, and sops computes its MAC
// over that other string. A string holding one is written double-quoted with every such
// character escaped, which each reader decodes to the same code points.
import type { ScalarTag, Tags } from "yaml";
import { stringTag, type StringifyContext } from "yaml/util";

// Outside YAML's printable set (C0 but tab and line feed, DEL, C1, the surrogates, U+FFFE and
// U+FFFF), line breaks in YAML 1.1 only (NEL, U+2028, U+2029), and U+FEFF, a byte order mark a
// reader may drop. Carriage return is a line break in a plain or block scalar: escaped too.
// With the u flag a surrogate pair is one code point, so only a lone surrogate matches.
// eslint-disable-next-line no-control-regex -- control characters are what it finds
const unreadable = /[\0-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]/u;

/**
 * Whether `value` must be written escaped to read back the same through Go's YAML: it holds an
 * unreadable character, or it is a multi-line string the yaml library would write as a block
 * scalar Go reads otherwise. Go takes a block's indentation from its first line that is not all
 * spaces and refuses a tab there (a value whose first non-empty line starts with a tab), and a
 * block of blank lines only loses its spaces.
 */
export function needsEscaping(value: string): boolean {
  return unreadable.test(value) || (value.includes("\n") && (/^\n*\t/.test(value) || /^\s*$/.test(value)));
}

const named: Readonly<Record<string, string>> = { "\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t" };

/** `value` as a double-quoted YAML scalar in which only printable characters appear as they are. */
export function escapedDoubleQuoted(value: string): string {
  let out = '"';
  for (const ch of value) {
    const code = ch.codePointAt(0)!;
    if (named[ch] !== undefined) out += named[ch];
    else if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) out += `\\x${hex(code, 2)}`;
    else if (unreadable.test(ch)) out += `\\u${hex(code, 4)}`;
    else out += ch;
  }
  return `${out}"`;
}

function hex(code: number, width: number): string {
  return code.toString(16).toUpperCase().padStart(width, "0");
}

/** yaml's string tag, but a string `needsEscaping` says so of is written by escapedDoubleQuoted. */
const readableString: ScalarTag = {
  ...stringTag,
  stringify(item, ctx: StringifyContext, onComment, onChompKeep) {
    const { value } = item;
    if (typeof value === "string" && needsEscaping(value)) return escapedDoubleQuoted(value);
    return stringTag.stringify!(item, ctx, onComment, onChompKeep);
  },
};

function withReadableStrings(tags: Tags): Tags {
  return tags.map((tag) => (tag === stringTag ? readableString : tag));
}

/**
 * The options every YAML document we parse or write is made with: YAML 1.1 as Go's readers
 * follow it (yes, on and 1:20 are quoted when they are strings), and readable strings.
 */
export const yamlOptions = { compat: "yaml-1.1", customTags: withReadableStrings } as const;

// What `kustomize build` cannot carry, measured with the pinned kustomize and kustomize-controller
// against the files this writer writes: kustomize reads an escaped value right, but prints what it
// built with its own encoder, which writes these raw. DEL, the C1 controls but NEL, a lone
// surrogate, U+FFFE and U+FFFF then fail its own re-read ("control characters are not allowed"),
// so the whole folder fails to build; NEL is read back as a line break folded to a space. The
// same holds in data, annotations, CRD-defined and cluster-scoped kinds alike; C0 controls,
// U+2028, U+2029 and U+FEFF come back the same.
const kustomizeRefuses = /[\x7f-\x84\x86-\x9f\ud800-\udfff\ufffe\uffff]/u;
const kustomizeChanges = /\x85/u;

/** A character of a value that `kustomize build` cannot carry, and what it would do. */
export interface Uncarried {
  codePoint: number;
  /** refused: the build fails, and Flux applies nothing of the folder; changed: another value is applied. */
  effect: "refused" | "changed";
}

// kustomize re-encodes every annotation (and any field a JSON 6902 patch targets) with its own
// encoder, which writes a value that starts with a tab and holds a line feed as a block scalar
// beginning with that tab, then refuses it, however this writer quoted it; unless it ends in a
// space, holds a space before a line break, or holds a character that encoder must escape.
// eslint-disable-next-line no-control-regex -- control characters are what it finds
const goEscapes = /[\0-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufeff\ufffe\uffff]/u;
const reencodedRefused = (value: string) =>
  value.startsWith("\t") &&
  value.includes("\n") &&
  !value.endsWith(" ") &&
  !/ [\n\u2028\u2029]/u.test(value) &&
  !goEscapes.test(value);

/**
 * The first character of `value` that `kustomize build` cannot carry unchanged, if any;
 * `reencoded`: kustomize encodes the value again itself (an annotation's).
 */
export function kustomizeCannotCarry(value: string, reencoded = false): Uncarried | undefined {
  const refused = kustomizeRefuses.exec(value);
  if (refused) return { codePoint: refused[0].codePointAt(0)!, effect: "refused" };
  if (reencoded && reencodedRefused(value)) return { codePoint: 0x09, effect: "refused" };
  const changed = kustomizeChanges.exec(value);
  return changed ? { codePoint: changed[0].codePointAt(0)!, effect: "changed" } : undefined;
}

/**
 * The first string of an object, key or value, that `kustomize build` cannot carry, with its
 * field path (`data.note`, `metadata.annotations.example.com/x`, `spec.items[2]`), if any.
 */
export function uncarriedField(object: unknown, path = ""): (Uncarried & { field: string }) | undefined {
  if (typeof object === "string") {
    const found = kustomizeCannotCarry(object, path.startsWith("metadata.annotations."));
    return found && { ...found, field: path };
  }
  if (Array.isArray(object)) {
    for (const [index, item] of object.entries()) {
      const found = uncarriedField(item, `${path}[${index}]`);
      if (found) return found;
    }
    return undefined;
  }
  if (object === null || typeof object !== "object") return undefined;
  for (const [key, item] of Object.entries(object)) {
    const field = path === "" ? key : `${path}.${key}`;
    const inKey = kustomizeCannotCarry(key);
    if (inKey) return { ...inKey, field };
    const found = uncarriedField(item, field);
    if (found) return found;
  }
  return undefined;
}

/** U+0085, as a message names a character. */
export function codePointName(codePoint: number): string {
  return `U+${hex(codePoint, 4)}`;
}

// What Go's YAML readers refuse, or read as another string, when it stands raw in a file: C0
// controls but tab, line feed and carriage return, DEL, the C1 controls (NEL a line break),
// U+2028, U+2029, U+FFFE, U+FFFF, and a byte order mark anywhere but the file's start. This
// writer never leaves one raw (it escapes them); a file an earlier version or a hand wrote may.
// eslint-disable-next-line no-control-regex -- control characters are what it finds
const rawUnreadable = /[\0-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ufffe\uffff]|(?<!^)\ufeff/u;

/** The first character of a file's text that Go's YAML readers refuse raw, and its line, if any. */
export function unreadableRaw(text: string): { codePoint: number; line: number } | undefined {
  const found = rawUnreadable.exec(text);
  if (!found) return undefined;
  const line = text.slice(0, found.index).split("\n").length;
  return { codePoint: found[0].codePointAt(0)!, line };
}
