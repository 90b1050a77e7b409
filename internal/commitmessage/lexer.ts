// The tokenizer: template text becomes text tokens and, inside each {{...}}, action tokens;
// comments and {{- -}} trimming are resolved here, so the parser never sees them.
import type { Source } from "./source.ts";

export type Token = { pos: number; spaced: boolean } & (
  | { kind: "text"; text: string }
  | { kind: "open" | "close" | "dot" | "declare" | "assign" | "pipe" | "lparen" | "rparen" | "comma" }
  | { kind: "eof" }
  | { kind: "ident"; name: string }
  | { kind: "field"; path: string[] }
  | { kind: "variable"; name: string; path: string[] }
  | { kind: "string"; value: string }
  | { kind: "number"; value: number }
);

const isSpace = (c: string | undefined) => c === " " || c === "\t" || c === "\r" || c === "\n";
const identStart = (c: string | undefined) => c !== undefined && /^[\p{L}_]$/u.test(c);
const identPart = (c: string | undefined) => c !== undefined && /^[\p{L}\p{N}_]$/u.test(c);

function trimStart(text: string): string {
  let i = 0;
  while (isSpace(text[i])) i++;
  return text.slice(i);
}

function trimEnd(text: string): string {
  let i = text.length;
  while (i > 0 && isSpace(text[i - 1])) i--;
  return text.slice(0, i);
}

export function lex(src: Source): Token[] {
  const s = src.text;
  const tokens: Token[] = [];
  let i = 0;
  let trimNext = false;
  const pushText = (text: string, pos: number) => {
    if (text !== "") tokens.push({ kind: "text", text, pos, spaced: false });
  };

  for (;;) {
    const open = s.indexOf("{{", i);
    let text = s.slice(i, open === -1 ? s.length : open);
    if (trimNext) text = trimStart(text);
    if (open === -1) {
      pushText(text, i);
      break;
    }
    // "{{- " trims; "{{-3}}" is the number -3, as in Go.
    const trimLeft = s[open + 2] === "-" && isSpace(s[open + 3]);
    pushText(trimLeft ? trimEnd(text) : text, i);
    const start = open + 2 + (trimLeft ? 2 : 0);
    ({ next: i, trim: trimNext } = s.startsWith("/*", start)
      ? skipComment(src, open, start)
      : lexAction(src, tokens, open, start));
  }
  tokens.push({ kind: "eof", pos: s.length, spaced: true });
  return tokens;
}

/** A comment is a whole action: "{{/*", optionally "{{- /*", up to "*\/}}" or "*\/ -}}". */
function skipComment(src: Source, open: number, start: number): { next: number; trim: boolean } {
  const s = src.text;
  const close = s.indexOf("*/", start + 2);
  if (close === -1) src.fail(open, "unclosed comment: no */ before the end of the template");
  const after = close + 2;
  if (isSpace(s[after]) && s.startsWith("-}}", after + 1)) return { next: after + 4, trim: true };
  if (s.startsWith("}}", after)) return { next: after + 2, trim: false };
  return src.fail(after, "comment ends before the closing }}; expected */}} or */ -}}");
}

function lexAction(
  src: Source,
  tokens: Token[],
  open: number,
  start: number,
): { next: number; trim: boolean } {
  const s = src.text;
  tokens.push({ kind: "open", pos: open, spaced: false });
  let j = start;
  let spaced = true;
  const push = (token: Token) => {
    tokens.push(token);
    spaced = false;
  };
  const readChain = (): string[] => {
    const path: string[] = [];
    while (s[j] === "." && identStart(s[j + 1])) {
      const from = ++j;
      while (identPart(s[j])) j++;
      path.push(s.slice(from, j));
    }
    return path;
  };

  for (;;) {
    if (j >= s.length) src.fail(open, "unclosed action: no }} before the end of the template");
    const c = s[j]!;
    const pos = j;
    if (isSpace(c)) {
      if (s.startsWith("-}}", j + 1)) {
        tokens.push({ kind: "close", pos: j + 1, spaced: true });
        return { next: j + 4, trim: true };
      }
      spaced = true;
      j++;
      continue;
    }
    if (s.startsWith("}}", j)) {
      tokens.push({ kind: "close", pos: j, spaced });
      return { next: j + 2, trim: false };
    }
    const punctuation = { "|": "pipe", "(": "lparen", ")": "rparen", ",": "comma", "=": "assign" } as const;
    if (c in punctuation) {
      push({ kind: punctuation[c as keyof typeof punctuation], pos, spaced });
      j++;
    } else if (c === ":") {
      if (s[j + 1] !== "=") src.fail(pos, 'expected ":=" after ":"');
      push({ kind: "declare", pos, spaced });
      j += 2;
    } else if (c === ".") {
      if (identStart(s[j + 1])) push({ kind: "field", path: readChain(), pos, spaced });
      else {
        push({ kind: "dot", pos, spaced });
        j++;
      }
    } else if (c === "$") {
      j++;
      while (identPart(s[j])) j++;
      const name = s.slice(pos, j);
      push({ kind: "variable", name, path: readChain(), pos, spaced });
    } else if (/[0-9]/.test(c) || ((c === "-" || c === "+") && /[0-9]/.test(s[j + 1] ?? ""))) {
      j++;
      while (j < s.length && /[\w.]/.test(s[j]!)) j++;
      const text = s.slice(pos, j);
      if (!/^[+-]?\d+(\.\d+)?$/.test(text)) src.fail(pos, `bad number syntax: ${text}`);
      push({ kind: "number", value: Number(text), pos, spaced });
    } else if (identStart(c)) {
      while (identPart(s[j])) j++;
      push({ kind: "ident", name: s.slice(pos, j), pos, spaced });
    } else if (c === '"') {
      j = quotedEnd(src, pos);
      push({ kind: "string", value: unquote(src, pos, j), pos, spaced });
    } else if (c === "`") {
      const end = s.indexOf("`", j + 1);
      if (end === -1) src.fail(pos, "unterminated raw string: no closing `");
      // Go drops carriage returns from raw strings, so a template saved on Windows means the same.
      push({ kind: "string", value: s.slice(j + 1, end).replaceAll("\r", ""), pos, spaced });
      j = end + 1;
    } else {
      src.fail(pos, `unexpected ${JSON.stringify(c)} in action`);
    }
  }
}

/** The index just past the closing quote of the string that opens at `pos`. */
function quotedEnd(src: Source, pos: number): number {
  const s = src.text;
  let j = pos + 1;
  while (s[j] !== '"') {
    if (j >= s.length || s[j] === "\n") src.fail(pos, "unterminated quoted string");
    j += s[j] === "\\" ? 2 : 1;
  }
  return j + 1;
}

const simpleEscapes: Record<string, string> = {
  a: "\x07",
  b: "\b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
  v: "\v",
  "\\": "\\",
  '"': '"',
};

function unquote(src: Source, start: number, end: number): string {
  const s = src.text;
  let out = "";
  for (let j = start + 1; j < end - 1; j++) {
    if (s[j] !== "\\") {
      out += s[j];
      continue;
    }
    const e = s[j + 1]!;
    const hexLength = { x: 2, u: 4, U: 8 }[e];
    if (e in simpleEscapes) {
      out += simpleEscapes[e];
      j++;
    } else if (hexLength !== undefined) {
      const hex = s.slice(j + 2, j + 2 + hexLength);
      const code = /^[0-9a-fA-F]+$/.test(hex) && hex.length === hexLength ? parseInt(hex, 16) : -1;
      // Go's \x is a byte, not a character; above 0x7f the two differ, so only ASCII is taken.
      const valid = e === "x" ? code >= 0 && code < 0x80 : code >= 0 && code <= 0x10ffff;
      if (!valid || (code >= 0xd800 && code <= 0xdfff)) src.fail(j, `invalid escape \\${e}${hex}`);
      out += String.fromCodePoint(code);
      j += 1 + hexLength;
    } else {
      src.fail(j, `unknown escape sequence \\${e}`);
    }
  }
  return out;
}
