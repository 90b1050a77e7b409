// The resolver: a watch event waits at most the grace window for the fact that names its
// actor, then goes on regardless. It registers a waiter under every key its query could match
// before it looks, so a fact landing between the look and the wait still wakes it, and it
// never polls. It takes the strongest evidence there is; the tier is what it reports.
import type { Actor, Fact } from "./fact.ts";
import type { FactIndex, FactKey, Scope } from "./factindex.ts";

/** What a watch event knows of the object it carries. */
export interface AttributionQuery extends Scope {
  namespace: string;
  name: string;
  uid: string;
  resourceVersion: string;
  /** A delete, or an object that is terminating: only a fact about its removal may answer. */
  removal: boolean;
}

export type Tier =
  "delete_sticky" | "exact" | "deletecollection_body_uid" | "latest" | "name" | "resource_version" | "absent";

export type Resolution = { tier: Exclude<Tier, "absent">; actor: Actor; fact: Fact } | { tier: "absent" };

interface Rung {
  tier: Exclude<Tier, "absent">;
  key: FactKey;
  /** Whether the fact found there may answer: a removal only takes a fact about its removal. */
  answers?: (fact: Fact) => boolean;
}

const aboutRemoval = (fact: Fact) => fact.verb === "delete" || fact.verb === "deletecollection";

/**
 * The tiers a query asks, strongest first. A removal asks the sticky delete slot first, then a
 * write at its own resourceVersion, the collections that listed it, and the object's own delete
 * fact; never its last edit. A create or update presents the version its own write made, so it
 * never falls through to the removal tiers, where the uid's pointer may name an older author.
 */
export function rungsOf(query: AttributionQuery): Rung[] {
  const { uid, resourceVersion: rv, namespace, name } = query;
  const rungs: Rung[] = [];
  if (query.removal) {
    if (uid) rungs.push({ tier: "delete_sticky", key: { kind: "sticky", uid } });
    if (uid && rv) rungs.push({ tier: "exact", key: { kind: "exact", uid, rv } });
    if (uid) rungs.push({ tier: "deletecollection_body_uid", key: { kind: "collection", uid } });
    if (uid) rungs.push({ tier: "latest", key: { kind: "uid", uid }, answers: aboutRemoval });
    rungs.push({ tier: "name", key: { kind: "name", namespace, name }, answers: aboutRemoval });
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
): Promise<Resolution> {
  const rungs = rungsOf(query);
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
