// The resolver: a watch event waits at most the grace window for the fact that names its
// actor, then goes on regardless. It registers a waiter under every key its query could match
// before it looks, so a fact landing between the look and the wait still wakes it, and it
// never polls. It takes the strongest evidence there is; the tier is what it reports.
import type { Actor, Fact } from "./fact.ts";
import { selectorMatches } from "../kube/labels.ts";
import { parseLabelSelector } from "../kube/labels.ts";
import type { LiveChange } from "../watch/attributor.ts";
import type { FactIndex, FactKey, Scope } from "./factindex.ts";

/** A live change, looked up in the scope its facts are filed in. */
export interface AttributionQuery extends Scope, LiveChange {}

export type Tier =
  | "delete_sticky"
  | "exact"
  | "deletecollection_body_uid"
  | "latest"
  | "name"
  | "deletecollection_scope"
  | "resource_version"
  /** A CommitRequest's creator: the create's fact by uid, never a later write's. */
  | "created"
  | "absent";

export type Resolution = { tier: Exclude<Tier, "absent">; actor: Actor; fact: Fact } | { tier: "absent" };

interface Rung {
  tier: Exclude<Tier, "absent">;
  key: FactKey;
  /** Whether the fact found there may answer: a removal only takes a fact about its removal. */
  answers?: (fact: Fact) => boolean;
}

const aboutRemoval = (fact: Fact) => fact.verb === "delete" || fact.verb === "deletecollection";

/** How long after a collection request a removal in its scope is credited to it. */
export const collectionScopeWindowMs = 60_000;

/**
 * Whether a collection request covers the removed object, when the API server returned no uid
 * set to say so: its namespace (the key), its label selector on the object's labels, a field
 * selector on the object's own name or namespace, and a removal within the window. A selector
 * it cannot read says nothing; a uid set, where there is one, is the answer, and this object is
 * not in it.
 */
export function coveredByCollection(fact: Fact, query: AttributionQuery, now = Date.now()): boolean {
  const collection = fact.collection;
  if (fact.verb !== "deletecollection" || !collection || collection.uids.length > 0) return false;
  if (now - fact.at > collectionScopeWindowMs) return false;
  const labels = parseLabelSelector(collection.labelSelector ?? "");
  if (!labels || !selectorMatches(labels, query.labels)) return false;
  return fieldsMatch(collection.fieldSelector ?? "", query);
}

/** A field selector on metadata.name and metadata.namespace; any other field says nothing. */
function fieldsMatch(selector: string, query: AttributionQuery): boolean {
  const fields: Record<string, string> = {
    "metadata.name": query.name,
    "metadata.namespace": query.namespace,
  };
  for (const part of selector === "" ? [] : selector.split(",")) {
    const m = /^\s*([a-z.]+)\s*(==|=|!=)\s*(\S*)\s*$/.exec(part);
    const actual = m && Object.hasOwn(fields, m[1]!) ? fields[m[1]!] : undefined;
    if (actual === undefined || (m![2] === "!=") === (actual === m![3])) return false;
  }
  return true;
}

/**
 * The tiers a query asks, strongest first. A removal asks the sticky delete slot first, then a
 * write at its own resourceVersion, the collections that listed it, and the object's own delete
 * fact; never its last edit. A create or update presents the version its own write made, so it
 * never falls through to the removal tiers, where the uid's pointer may name an older author.
 */
/** The one tier a CommitRequest's author is read from: the fact of the create that made it. */
export const creatorRungs = (uid: string): Rung[] => [{ tier: "created", key: { kind: "created", uid } }];

export function rungsOf(query: AttributionQuery): Rung[] {
  const { uid, resourceVersion: rv, namespace, name } = query;
  const rungs: Rung[] = [];
  if (query.removal) {
    if (uid) rungs.push({ tier: "delete_sticky", key: { kind: "sticky", uid } });
    if (uid && rv) rungs.push({ tier: "exact", key: { kind: "exact", uid, rv } });
    if (uid) rungs.push({ tier: "deletecollection_body_uid", key: { kind: "collection", uid } });
    if (uid) rungs.push({ tier: "latest", key: { kind: "uid", uid }, answers: aboutRemoval });
    rungs.push({ tier: "name", key: { kind: "name", namespace, name }, answers: aboutRemoval });
    rungs.push({
      tier: "deletecollection_scope",
      key: { kind: "scope", namespace },
      answers: (fact) => coveredByCollection(fact, query),
    });
  } else {
    if (uid && rv) rungs.push({ tier: "exact", key: { kind: "exact", uid, rv } });
    rungs.push({ tier: "name", key: { kind: "name", namespace, name } });
  }
  if (rv) rungs.push({ tier: "resource_version", key: { kind: "rv", rv } });
  return rungs;
}

/** The strongest answer the index holds for a query now. */
export function lookUp(index: FactIndex, query: AttributionQuery, rungs = rungsOf(query)): Resolution {
  for (const rung of rungs) {
    const fact = index.get(query, rung.key);
    if (fact && (rung.answers?.(fact) ?? true)) return { tier: rung.tier, actor: fact.actor, fact };
  }
  return { tier: "absent" };
}

/**
 * Resolves a query, waiting at most `graceMs` for a fact that answers it. A fact is filed under
 * all of its keys at once, so the first answer is the strongest that fact gives.
 */
export async function resolve(
  index: FactIndex,
  query: AttributionQuery,
  graceMs: number,
  rungs = rungsOf(query),
): Promise<Resolution> {
  let wake: () => void = () => undefined;
  const stop = index.watch(
    query,
    rungs.map((r) => r.key),
    () => wake(),
  );
  try {
    const deadline = Date.now() + graceMs;
    for (;;) {
      const found = lookUp(index, query, rungs);
      if (found.tier !== "absent") return found;
      const left = deadline - Date.now();
      if (left <= 0) return found;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  } finally {
    stop();
  }
}
