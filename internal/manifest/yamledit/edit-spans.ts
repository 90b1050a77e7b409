// Which bytes of a multi-document file belong to which document, read from yaml's CST.
import { Parser, type CST } from "yaml";
import { blank } from "./edit-text.ts";

/** The bytes document i owns, in file order; spans tile the file. */
export interface DocumentSpan {
  /** Its leading comments, directives and `---` line start here. */
  start: number;
  end: number;
  /** Whether the document opens with its own `---`. */
  explicitStart: boolean;
  /** Its `---` line, when that line holds nothing else and no directive needs it. */
  marker?: { start: number; end: number };
}

/**
 * A document owns everything from the end of the one before it through its own end: the
 * comments above it are its own, as yaml reads them into its commentBefore. The comments after
 * the last document belong to it too.
 */
export function documentSpans(source: string): DocumentSpan[] {
  const spans: DocumentSpan[] = [];
  let groupStart: number | undefined = 0;
  let directives = false;
  for (const token of new Parser().parse(source)) {
    if (token.type === "document") {
      const marker = markerLine(source, token);
      spans.push({
        start: groupStart ?? token.offset,
        end: source.length,
        explicitStart: marker !== undefined,
        ...(marker && !marker.shared && !directives
          ? { marker: { start: marker.start, end: marker.end } }
          : {}),
      });
      groupStart = undefined;
      directives = false;
    } else if (token.type !== "doc-end") {
      groupStart ??= token.offset;
      directives ||= token.type === "directive";
    }
  }
  spans.forEach((span, i) => (span.end = spans[i + 1]?.start ?? source.length));
  return spans;
}

function markerLine(source: string, document: CST.Document) {
  const marker = document.start.find((token) => token.type === "doc-start");
  if (!marker) return undefined;
  const newline = source.indexOf("\n", marker.offset);
  const lineEnd = newline < 0 ? source.length : newline;
  const shared = !blank(source.slice(marker.offset + marker.source.length, lineEnd));
  return { start: marker.offset, end: newline < 0 ? lineEnd : lineEnd + 1, shared };
}
