// Stable YAML: equal objects render to the same bytes whatever order their keys came in, so a
// file in Git changes only when the object does, and a digest of the text identifies content.
import type { KubernetesObject } from "@kubernetes/client-node";
import { Document, isMap, isScalar, visit, type Pair } from "yaml";
import { yamlOptions } from "./yamlstrings.ts";

// The order people read a manifest in; keys not listed follow, sorted.
const topLevelOrder = ["apiVersion", "kind", "metadata", "spec", "data", "stringData", "binaryData"];
const metadataOrder = ["name", "namespace", "labels", "annotations"];

/**
 * Renders `object` as YAML: top-level keys as apiVersion, kind, metadata, spec, data,
 * stringData, binaryData, then the rest sorted; metadata as name, namespace, labels,
 * annotations, then the rest sorted; every other map sorted. Arrays keep their order, which
 * means something. Ends with a newline.
 */
export function toStableYaml(object: KubernetesObject): string {
  return renderStable(stableDocument(object));
}

/** `object` as a YAML Document in the order toStableYaml writes, for a caller that edits it first. */
export function stableDocument(object: KubernetesObject): Document {
  const document = new Document(object, {
    // A sub-object met twice is written out twice, never as an anchor and an alias: a manifest
    // spells out every value.
    aliasDuplicateObjects: false,
    // kubectl, Flux and Argo CD read YAML with Go libraries that follow YAML 1.1, where yes, on,
    // y and 1:20 are not strings, and NEL or U+2028 break a line (yamlstrings.ts).
    ...yamlOptions,
  });
  const root = document.contents;
  const metadata: unknown = isMap(root) ? root.get("metadata", true) : undefined;
  visit(document, {
    Map(_key, map) {
      map.items.sort(byOrderThenName(map === root ? topLevelOrder : map === metadata ? metadataOrder : []));
    },
  });
  return document;
}

/** A Document as toStableYaml writes it. */
export function renderStable(document: Document): string {
  // lineWidth 0: never fold a long string (an annotation, a command line) across lines.
  return document.toString({ lineWidth: 0 });
}

function byOrderThenName(order: readonly string[]): (a: Pair, b: Pair) => number {
  const rank = (name: string) => {
    const index = order.indexOf(name);
    return index < 0 ? order.length : index;
  };
  return (a, b) => {
    const [nameA, nameB] = [keyOf(a), keyOf(b)];
    return rank(nameA) - rank(nameB) || compareCodeUnits(nameA, nameB);
  };
}

// Keys of a map built from JSON are always scalars.
function keyOf(pair: Pair): string {
  return isScalar(pair.key) ? String(pair.key.value) : "";
}

// Code-unit order: unlike localeCompare it is the same on every machine, and unlike a plain
// object's key order it does not put integer-like keys ("10") before the others.
function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
