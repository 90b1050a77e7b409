import type { LabelSelector } from "../../generated/v1alpha3/index.ts";
import { selectorMatches } from "../grants/namespaces.ts";
import type { Collection } from "./watchedtypes.ts";

/** A LabelSelector in the string form list and watch requests take, with a stable order. */
export function labelSelectorString(selector: LabelSelector | undefined): string {
  if (!selector) return "";
  const parts = Object.entries(selector.matchLabels ?? {})
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, value]) => `${key}=${value}`);
  for (const { key, operator, values = [] } of selector.matchExpressions ?? []) {
    const list = [...values].sort().join(",");
    if (operator === "In") parts.push(`${key} in (${list})`);
    else if (operator === "NotIn") parts.push(`${key} notin (${list})`);
    else if (operator === "Exists") parts.push(key);
    else parts.push(`!${key}`);
  }
  return parts.join(",");
}

/** Whether a collection's selector selects an object with `labels`, as the API server's labelSelector does. */
export function selects(collection: Pick<Collection, "selector">, labels: Record<string, string>): boolean {
  return !collection.selector || selectorMatches(collection.selector, labels);
}
