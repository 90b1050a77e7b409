// Label selectors: the string form list and watch requests take, read back, and matched against
// an object's labels as the API server matches them. One home, below every room that selects.
import type { LabelSelector } from "../../generated/v1alpha3/kinds.ts";

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
export function selects(collection: { selector?: LabelSelector }, labels: Record<string, string>): boolean {
  return !collection.selector || selectorMatches(collection.selector, labels);
}

/**
 * The LabelSelector a labelSelector string means, as the API server parses it: `k=v`, `k==v`,
 * `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k` and `!k`, joined by commas. Undefined for what it
 * cannot read with certainty, which the caller treats as "does not say".
 */
export function parseLabelSelector(text: string): LabelSelector | undefined {
  const matchExpressions: NonNullable<LabelSelector["matchExpressions"]> = [];
  // Commas separate requirements except inside a value list's parentheses.
  for (const raw of text.trim() === "" ? [] : text.split(/,(?![^(]*\))/)) {
    const part = raw.trim();
    let m: RegExpExecArray | null;
    if ((m = new RegExp(`^!\\s*(${keyPattern})$`).exec(part))) {
      matchExpressions.push({ key: m[1]!, operator: "DoesNotExist" });
    } else if ((m = new RegExp(`^(${keyPattern})\\s+(in|notin)\\s*\\(([^()]*)\\)$`).exec(part))) {
      const values = m[3]!.split(",").map((v) => v.trim());
      if (!values.every((v) => valuePattern.test(v))) return undefined;
      matchExpressions.push({ key: m[1]!, operator: m[2] === "in" ? "In" : "NotIn", values });
    } else if ((m = new RegExp(`^(${keyPattern})\\s*(==|!=|=)\\s*([^\\s]*)$`).exec(part))) {
      if (!valuePattern.test(m[3]!)) return undefined;
      matchExpressions.push({ key: m[1]!, operator: m[2] === "!=" ? "NotIn" : "In", values: [m[3]!] });
    } else if ((m = new RegExp(`^(${keyPattern})$`).exec(part))) {
      matchExpressions.push({ key: m[1]!, operator: "Exists" });
    } else return undefined;
  }
  return { matchExpressions };
}

/** A label key: an optional DNS prefix and a slash, then a name. */
const keyPattern = String.raw`(?:[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?`;
/** A label value, which may be empty. */
const valuePattern = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;

export function selectorMatches(selector: LabelSelector, labels: Record<string, string>): boolean {
  for (const [key, value] of Object.entries(selector.matchLabels ?? {}))
    if (labels[key] !== value) return false;
  for (const { key, operator, values = [] } of selector.matchExpressions ?? []) {
    const present = Object.hasOwn(labels, key);
    const ok =
      operator === "In"
        ? present && values.includes(labels[key]!)
        : operator === "NotIn"
          ? !present || !values.includes(labels[key]!)
          : operator === "Exists"
            ? present
            : !present;
    if (!ok) return false;
  }
  return true;
}
