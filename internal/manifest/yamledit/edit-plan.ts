// Plans the smallest text change that makes a parsed document equal a desired JSON tree: values
// that are already equal are not touched, collections are patched entry by entry, and only a
// value whose kind changes is re-rendered whole.
import { isMap, isNode, isScalar, isSeq, type Document } from "yaml";
import { isPlainObject, jsonEqual } from "./edit-json.ts";
import type { Layout } from "./edit-layout.ts";
import { planBlockMap, planBlockSeq } from "./edit-plan-block.ts";
import { planFlowMap, planFlowSeq } from "./edit-plan-flow.ts";
import { replaceScalar, replaceWhole, type Place, type PlanContext } from "./edit-replace.ts";
import { UnsafeEdit, type Splice } from "./edit-text.ts";

/**
 * The splices that make `document` (parsed from `source`, which ends with a line break) equal
 * `desired`; throws UnsafeEdit when a splice would not be safe.
 */
export function planDocument(source: string, document: Document, layout: Layout, desired: unknown): Splice[] {
  const context: PlanContext = {
    source,
    document,
    layout,
    plan: (node, value, place) => planNode(context, node, value, place),
  };
  if (document.contents === null) throw new UnsafeEdit("an empty document has no node to patch");
  return context.plan(document.contents, desired, { kind: "root" });
}

function planNode(context: PlanContext, node: unknown, desired: unknown, place: Place): Splice[] {
  if (!isNode(node)) throw new UnsafeEdit("a value that is not a node");
  if (jsonEqual(node.toJS(context.document), desired)) return [];
  if (isMap(node) && isPlainObject(desired)) {
    return (node.flow ? planFlowMap : planBlockMap)(context, node, desired, place);
  }
  if (isSeq(node) && Array.isArray(desired)) {
    return (node.flow ? planFlowSeq : planBlockSeq)(context, node, desired, place);
  }
  if (isScalar(node) && !isPlainObject(desired) && !Array.isArray(desired)) {
    return [replaceScalar(context, node, desired, place)];
  }
  return [replaceWhole(context, node, desired, place)];
}
