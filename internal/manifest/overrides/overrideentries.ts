// The images: and replicas: entries of a kustomization, each value with its place in the text, so
// edit-through can rewrite one scalar and leave every other byte, comments included, as it was.
import { Document, Scalar, isMap, isScalar, isSeq, parseDocument, type YAMLMap } from "yaml";
import { yamlOptions } from "../../sanitize/yamlstrings.ts";
import { imageFields, type ImageEntry, type ImageField } from "./imageref.ts";

/** Where a scalar sits in a kustomization's text, and how it was quoted. */
export interface Spot {
  start: number;
  end: number;
  type: Scalar.Type | undefined;
}

/** A well-formed images: entry, with where each field it declares sits. */
export interface ImageOverride extends ImageEntry {
  spots: Partial<Record<ImageField, Spot>>;
}

/** A well-formed replicas: entry, with where its count sits. */
export interface ReplicaOverride {
  name: string;
  count: number;
  spot: Spot;
}

/** A new value for the scalar at `spot`. */
export interface Splice {
  spot: Spot;
  value: string | number;
}

const flowTypes = new Set<Scalar.Type | undefined>([Scalar.PLAIN, Scalar.QUOTE_DOUBLE, Scalar.QUOTE_SINGLE]);

/** The well-formed images: and replicas: entries of a kustomization's text, in order. */
export function overridesOf(source: string): { images: ImageOverride[]; replicas: ReplicaOverride[] } {
  // Parsed as YAML 1.1, as kustomize's Go reader does. Text that does not parse, and any entry
  // that is not well formed, contributes nothing: the acceptance gate refuses those.
  const document = parseDocument(source, { version: "1.1" });
  const root = document.errors.length === 0 ? document.contents : null;
  const items = (key: string) => {
    const node = isMap(root) ? root.get(key, true) : undefined;
    return isSeq(node) ? node.items : [];
  };
  return {
    images: items("images").flatMap(imageOverride),
    replicas: items("replicas").flatMap(replicaOverride),
  };
}

function imageOverride(item: unknown): ImageOverride[] {
  if (!isMap(item)) return [];
  const name = scalarAt(item, "name", isString);
  if (!name) return [];
  const entry: ImageOverride = { name: name.value, spots: {} };
  for (const field of imageFields) {
    if (!item.has(field)) continue;
    const found = scalarAt(item, field, isString);
    if (!found) return [];
    // kustomize treats an empty field as unset, so it is not one the entry declares.
    if (found.value === "") continue;
    entry[field] = found.value;
    entry.spots[field] = found.spot;
  }
  return Object.keys(entry.spots).length > 0 ? [entry] : [];
}

function replicaOverride(item: unknown): ReplicaOverride[] {
  if (!isMap(item)) return [];
  const name = scalarAt(item, "name", isString);
  const count = scalarAt(item, "count", isCount);
  return name && count ? [{ name: name.value, count: count.value, spot: count.spot }] : [];
}

function scalarAt<T>(
  map: YAMLMap,
  key: string,
  accepts: (value: unknown) => value is T,
): { value: T; spot: Spot } | undefined {
  const node = map.get(key, true);
  if (!isScalar(node) || !accepts(node.value) || !node.range) return undefined;
  return { value: node.value, spot: { start: node.range[0], end: node.range[1], type: node.type } };
}

const isString = (value: unknown): value is string => typeof value === "string";

/** A replica count kustomize accepts: a non-negative integer. */
export function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0;
}

/** Whether a new value can replace the scalar at `spot` in place. */
export function splicable(spot: Spot | undefined): boolean {
  // A block scalar's text spans lines whose indentation belongs to its context, so it is not spliced.
  return spot !== undefined && flowTypes.has(spot.type);
}

/** `source` with each splice's scalar replaced, keeping its quoting and every other byte. */
export function spliceAll(source: string, splices: readonly Splice[]): string {
  // From the end, so the offsets of the splices still to come stay valid.
  return [...splices]
    .sort((a, b) => b.spot.start - a.spot.start)
    .reduce(
      (text, { spot, value }) =>
        text.slice(0, spot.start) + scalarText(value, spot.type) + text.slice(spot.end),
      source,
    );
}

// A plain value that YAML 1.1 or 1.2 would read as another type (1.27, 1e3) gets quoted, and so
// does one holding a flow indicator, since the entry may be a flow map.
function scalarText(value: string | number, type: Scalar.Type | undefined): string {
  const scalar = new Scalar(value);
  scalar.type = type === Scalar.PLAIN && /[,[\]{}]/.test(String(value)) ? Scalar.QUOTE_DOUBLE : type;
  return new Document(scalar, yamlOptions).toString({ lineWidth: 0 }).trimEnd();
}
