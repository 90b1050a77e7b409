// Edits a manifest file the way a careful human would: one document is patched in place, so only
// the values that changed change, and comments, key order, quoting, blank lines, indentation and
// sibling documents keep their bytes. Every edit is verified by reading the result back; a splice
// that does not read back right falls back to re-rendering that one document.
import { parseAllDocuments, type Document } from "yaml";
import { yamlOptions } from "../../sanitize/yamlstrings.ts";
import { rerenderDocument } from "./edit-fallback.ts";
import { jsonEqual } from "./edit-json.ts";
import { defaultLayout, detectLayout, type Layout } from "./edit-layout.ts";
import { planDocument } from "./edit-plan.ts";
import { renderRoot } from "./edit-render.ts";
import { documentSpans, type DocumentSpan } from "./edit-spans.ts";
import { applySplices, UnsafeEdit, type Splice } from "./edit-text.ts";

/** A file's documents, parsed once; index i is the i-th YAML document in the file. */
export function parseManifestFile(source: string): Document.Parsed[] {
  // Source tokens let the editor find each value's bytes; yamlOptions make yaml quote a new "yes"
  // or "1:20", and escape a control character, when it writes the document again.
  const documents = [...parseAllDocuments(source, { keepSourceTokens: true, ...yamlOptions })];
  documents.forEach((document, i) => {
    const [error] = document.errors;
    if (error) throw new Error(`document ${i} of the manifest file does not parse: ${error.message}`);
  });
  return documents;
}

/** An edited file, with its documents as the check that it reads back right parsed them. */
export interface EditedFile {
  text: string;
  /** As yaml's parseAllDocuments reads `text`; none when the text is the source, unchanged. */
  documents?: Document.Parsed[];
}

/**
 * Returns the file with document `index` patched in place to equal `desired` (a plain JSON
 * object). Returns `source` unchanged (same string) when the document already equals `desired`.
 */
export function replaceDocument(source: string, index: number, desired: unknown): string {
  return replaceDocumentChecked(source, index, desired).text;
}

/**
 * replaceDocument, with the edited file's documents as its check read them, so a caller that
 * needs them does not parse the file again. `parsed` is the source as parseManifestFile reads
 * it, when the caller has it: the splice only reads it.
 */
export function replaceDocumentChecked(
  source: string,
  index: number,
  desired: unknown,
  parsed: Document.Parsed[] = parseManifestFile(source),
): EditedFile {
  const document = documentAt(parsed, index);
  if (jsonEqual(valueOf(document), desired)) return { text: source };
  const expected = parsed.map((other, i) => (i === index ? desired : valueOf(other)));
  const layout = detectLayout(source, parsed);
  const spliced = spliceInPlace(source, document, layout, desired);
  const checked = spliced === undefined ? undefined : readsAs(spliced, expected);
  if (checked) return { text: spliced!, documents: checked };
  const span = spansOf(source, parsed)[index]!;
  // yaml writes a block scalar's indentation indicator right only for 2-space indentation, so
  // when the file's own indentation does not read back, 2 spaces are tried too.
  for (const fallback of [layout, defaultLayout]) {
    // Patching mutates nodes, so each try works on a fresh parse.
    const fresh = documentAt(parseManifestFile(source), index);
    const rendered = inLineBreaks(source, rerenderDocument(fresh, desired, fallback));
    const text = source.slice(0, span.start) + rendered + source.slice(span.end);
    const documents = readsAs(text, expected);
    if (documents) return { text, documents };
  }
  throw new Error(`bug: re-rendering document ${index} does not read back as the desired object`);
}

/**
 * Returns the file without document `index`, or undefined when no document is left (the caller
 * deletes the file). Sibling documents keep their bytes.
 */
export function removeDocument(source: string, index: number): string | undefined {
  const documents = parseManifestFile(source);
  documentAt(documents, index);
  if (documents.length === 1) return undefined;
  const spans = spansOf(source, documents);
  const span = spans[index]!;
  // A document owns the comments above it, as yaml reads them (its commentBefore): removing
  // document 0 removes a comment at the top of the file too, the same rule as for any other.
  const cuts: Splice[] = [{ start: span.start, end: span.end, text: "" }];
  // A document also takes the `---` above it. The first has none unless it opens with its own,
  // so it takes the one below it, which would otherwise be left opening the file.
  const next = spans[1];
  if (index === 0 && !span.explicitStart && next?.marker) cuts.push({ ...next.marker, text: "" });
  const result = applySplices(source, cuts);
  const expected = documents.filter((_, i) => i !== index).map(valueOf);
  if (!readsAs(result, expected)) throw new Error(`bug: removing document ${index} changes its siblings`);
  return result;
}

/**
 * Returns the file with `object` appended as a new last document (separated by `---`), rendered
 * in the file's style as far as practical.
 */
export function appendDocument(source: string, object: unknown): string {
  const documents = parseManifestFile(source);
  const text = renderRoot(object, detectLayout(source, documents));
  // Comments in a file without documents stay above the first one, which needs no separator.
  const head =
    source.trim() === "" ? "" : source.endsWith("\n") ? source : source + inLineBreaks(source, "\n");
  const result = head + inLineBreaks(source, documents.length > 0 ? `---\n${text}` : text);
  if (!readsAs(result, [...documents.map(valueOf), object])) {
    throw new Error("bug: the appended document does not read back as the object");
  }
  return result;
}

function valueOf(document: Document): unknown {
  return document.toJS();
}

function documentAt(documents: Document.Parsed[], index: number): Document.Parsed {
  const document = documents[index];
  if (!document) throw new RangeError(`the manifest file has no document ${index}`);
  return document;
}

function spansOf(source: string, documents: readonly Document[]): DocumentSpan[] {
  const spans = documentSpans(source);
  if (spans.length !== documents.length) {
    throw new Error(`bug: ${spans.length} document spans for ${documents.length} documents`);
  }
  return spans;
}

// The minimal-change path, or undefined when a splice is not safe. It plans on the file as if it
// ended with a line break, so lines inserted at the very end start on a line of their own; the
// break is taken off again unless an insertion there needed it.
function spliceInPlace(
  source: string,
  document: Document,
  layout: Layout,
  desired: unknown,
): string | undefined {
  const padded = source === "" || source.endsWith("\n") ? source : inLineBreaks(source, `${source}\n`);
  try {
    const splices = planDocument(padded, document, layout, desired).map((edit) => ({
      ...edit,
      text: inLineBreaks(source, edit.text),
    }));
    const result = applySplices(padded, splices);
    const padding = padded.length - source.length;
    const touchesEnd = splices.some((edit) => edit.end > source.length);
    return padding === 0 || touchesEnd ? result : result.slice(0, -padding);
  } catch (error) {
    if (error instanceof UnsafeEdit) return undefined;
    throw error;
  }
}

// New text takes the file's line breaks: a file written on Windows keeps its \r\n.
function inLineBreaks(source: string, text: string): string {
  return source.includes("\r\n") ? text.replace(/\r?\n/g, "\r\n") : text;
}

// The check every edit must pass: `text` reads as exactly `expected`, document by document.
// Returns the documents it read, or undefined when they are not that.
function readsAs(text: string, expected: readonly unknown[]): Document.Parsed[] | undefined {
  const documents = parseAllDocuments(text);
  try {
    const right =
      documents.length === expected.length &&
      documents.every(
        (document, i) => document.errors.length === 0 && jsonEqual(document.toJS(), expected[i]),
      );
    return right ? [...documents] : undefined;
  } catch {
    return undefined;
  }
}
