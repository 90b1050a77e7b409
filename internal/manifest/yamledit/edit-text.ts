// Source-text primitives for in-place editing: splices on the file's text and the line arithmetic
// that decides which bytes a map entry or sequence item owns.

/** A planned edit that cannot be made safely as a splice; the caller re-renders the document. */
export class UnsafeEdit extends Error {
  override name = "UnsafeEdit";
}

/** Replace source[start, end) with text. */
export interface Splice {
  start: number;
  end: number;
  text: string;
}

/** Applies non-overlapping splices; insertions at one point keep the order they were planned in. */
export function applySplices(source: string, splices: readonly Splice[]): string {
  // Array sort is stable, so planning order decides between insertions at the same point: a
  // nested map's new key is planned before its parent's and so lands above it. An insertion
  // sorts before a removal that starts where it is.
  const ordered = [...splices].sort(
    (a, b) => a.start - b.start || Number(a.end > a.start) - Number(b.end > b.start),
  );
  let result = "";
  let cursor = 0;
  for (const splice of ordered) {
    if (splice.start < cursor) throw new UnsafeEdit(`overlapping edits at offset ${splice.start}`);
    result += source.slice(cursor, splice.start) + splice.text;
    cursor = splice.end;
  }
  return result + source.slice(cursor);
}

/** The offset where the line holding `pos` begins. */
export function lineStart(source: string, pos: number): number {
  return source.lastIndexOf("\n", pos - 1) + 1;
}

/** The offset just past the newline that ends the line holding `pos` (a line start is its own end). */
export function lineEndAfter(source: string, pos: number): number {
  if (pos > 0 && source[pos - 1] === "\n") return pos;
  const newline = source.indexOf("\n", pos);
  return newline < 0 ? source.length : newline + 1;
}

/** The offset of the line break (`\n` or `\r\n`) that ends the line holding `pos`, or the end of the source. */
export function newlineAt(source: string, pos: number): number {
  const newline = source.indexOf("\n", pos);
  if (newline < 0) return source.length;
  return newline > pos && source[newline - 1] === "\r" ? newline - 1 : newline;
}

/** The column of `pos` on its line. */
export function columnOf(source: string, pos: number): number {
  return pos - lineStart(source, pos);
}

/** Whether only indentation precedes `pos` on its line. */
export function startsLine(source: string, pos: number): boolean {
  return blank(source.slice(lineStart(source, pos), pos));
}

/** Whether `text` holds only YAML white space and line breaks (String.trim takes Unicode spaces too). */
export function blank(text: string): boolean {
  return /^[ \t\r]*$/.test(text);
}

/**
 * Where the lines an entry owns begin: its own line, plus the comment lines directly above it at
 * its column, never above `floor`. A comment at another column, or cut off by a blank line,
 * belongs to the structure around the entry and stays.
 */
export function ownedStart(source: string, pos: number, floor: number): number {
  let start = lineStart(source, pos);
  const comment = `${" ".repeat(pos - start)}#`;
  while (start > floor) {
    const above = lineStart(source, start - 1);
    if (above < floor || !source.startsWith(comment, above)) break;
    start = above;
  }
  return start;
}

/** Indents every non-empty line after the first by `column` spaces. */
export function indentContinuation(text: string, column: number): string {
  const pad = " ".repeat(column);
  return text.replace(/\n(?=[^\n])/g, `\n${pad}`);
}
