// The fact index: where the watch side finds the fact that names a watch event's actor. Facts
// are filed, within a scope of (audit route, group/resource), under the strongest key they
// have: (uid, rv) and (uid) together, else (uid), else (rv), else (namespace, name); a
// deletecollection under each uid it returned and its namespace's scope. A delete
// fact also takes a sticky slot by uid, which no later write's fact replaces and the TTL does
// not age out: who asked for an object's deletion is never superseded. Entries expire on read
// and are capped per type and in total, oldest first.
import type { Fact } from "./fact.ts";

export interface FactIndexLimits {
  /** How long a fact answers: minutes, since watch owns state and old facts are never needed. */
  ttlMs: number;
  perType: number;
  total: number;
}

export const defaultFactIndexLimits: FactIndexLimits = { ttlMs: 5 * 60_000, perType: 20_000, total: 100_000 };

/** The scope a fact is filed in and a watch event is looked up in. */
export interface Scope {
  route: string;
  group: string;
  resource: string;
}

export type FactKey =
  | { kind: "exact"; uid: string; rv: string }
  | { kind: "uid"; uid: string }
  | { kind: "rv"; rv: string }
  | { kind: "name"; namespace: string; name: string }
  | { kind: "sticky"; uid: string }
  | { kind: "collection"; uid: string }
  | { kind: "scope"; namespace: string }
  /** The write that created the object: a CommitRequest's author is its creator, whatever came later. */
  | { kind: "created"; uid: string };

/** The keys a fact is filed under: the strongest it has, and the sticky slot of a delete. */
export function keysOf(fact: Fact): FactKey[] {
  const keys: FactKey[] = [];
  if (fact.collection) {
    // The namespace's latest collection request, for removals its uid set does not name.
    const scope: FactKey = { kind: "scope", namespace: fact.namespace };
    return [...fact.collection.uids.map((uid) => ({ kind: "collection" as const, uid })), scope];
  }
  if (fact.uid && fact.resourceVersion)
    keys.push({ kind: "exact", uid: fact.uid, rv: fact.resourceVersion }, { kind: "uid", uid: fact.uid });
  else if (fact.uid) keys.push({ kind: "uid", uid: fact.uid });
  else if (fact.resourceVersion) keys.push({ kind: "rv", rv: fact.resourceVersion });
  else keys.push({ kind: "name", namespace: fact.namespace, name: fact.name });
  if (fact.verb === "delete" && fact.uid) keys.push({ kind: "sticky", uid: fact.uid });
  if (fact.created && fact.uid) keys.push({ kind: "created", uid: fact.uid });
  return keys;
}

export const scopeKeyOf = (scope: Scope) => `${scope.route}|${scope.group}/${scope.resource}`;

function keyText(key: FactKey): string {
  switch (key.kind) {
    case "exact":
      return `e:${key.uid}:${key.rv}`;
    case "uid":
    case "sticky":
    case "collection":
      return `${key.kind[0]}:${key.uid}`;
    case "rv":
      return `r:${key.rv}`;
    case "name":
      return `n:${key.namespace}/${key.name}`;
    case "scope":
      return `s:${key.namespace}`;
    case "created":
      return `o:${key.uid}`;
  }
}

interface Entry {
  fact: Fact;
  expiresAt: number;
  scope: string;
}

/** The key of the version a fact's write left the object at: (uid, rv), else rv alone. */
function versionKeyOf(fact: Fact): FactKey | undefined {
  if (fact.collection || !fact.resourceVersion) return undefined;
  return fact.uid
    ? { kind: "exact", uid: fact.uid, rv: fact.resourceVersion }
    : { kind: "rv", rv: fact.resourceVersion };
}

/** Whether `a` finished before `b`; of two that finished in the same millisecond, the one heard first. */
function finishedBefore(a: Fact, b: Fact): boolean {
  return a.at < b.at;
}

export class FactIndex {
  /** Every entry, oldest first, by scope and key. */
  private readonly entries = new Map<string, Entry>();
  private readonly perScope = new Map<string, Set<string>>();
  private readonly waiters = new Map<string, Set<() => void>>();

  constructor(
    private readonly limits: FactIndexLimits = defaultFactIndexLimits,
    private readonly now: () => number = Date.now,
    /** Told of each fact dropped as a no-op's. */
    private readonly onNoop: (fact: Fact) => void = () => {},
  ) {}

  /**
   * Files a fact under its keys, and wakes whoever waits on one of them. Exactly one request
   * made each resourceVersion: a write that changed nothing is answered with the version the
   * last real write made, so a second fact for an object's version is a no-op's. Of the two, the
   * one that finished first made the version (a no-op reads what that write stored, then
   * finishes); the other is dropped, and counted, never filed where it could win.
   */
  apply(fact: Fact): void {
    const scope = scopeKeyOf(fact);
    const made = this.madeVersion(scope, fact);
    if (made && made.auditID !== fact.auditID) {
      if (!finishedBefore(fact, made)) {
        this.onNoop(fact);
        return;
      }
      this.unfile(scope, made);
      this.onNoop(made);
    }
    for (const key of keysOf(fact)) {
      const full = `${scope}|${keyText(key)}`;
      // A sticky slot keeps the first deletion it heard: a later write's fact never replaces it.
      if (key.kind === "sticky" && this.entries.has(full)) continue;
      this.entries.delete(full);
      const sticky = key.kind === "sticky";
      this.entries.set(full, { fact, expiresAt: sticky ? Infinity : this.now() + this.limits.ttlMs, scope });
      const keys = this.perScope.get(scope) ?? new Set<string>();
      keys.delete(full);
      keys.add(full);
      this.perScope.set(scope, keys);
      this.evict(scope);
      for (const wake of this.waiters.get(full) ?? []) wake();
    }
  }

  /** The fact filed for the version `fact` names, in `scope`: the request that made it, so far. */
  private madeVersion(scope: string, fact: Fact): Fact | undefined {
    const key = versionKeyOf(fact);
    if (!key) return undefined;
    const entry = this.entries.get(`${scope}|${keyText(key)}`);
    return entry && entry.expiresAt > this.now() ? entry.fact : undefined;
  }

  /** Takes `fact` out from under every key it is filed under. */
  private unfile(scope: string, fact: Fact): void {
    for (const key of keysOf(fact)) {
      const full = `${scope}|${keyText(key)}`;
      if (this.entries.get(full)?.fact === fact) this.drop(full);
    }
  }

  /** The fact filed under `key` in `scope`, if it has not expired. */
  get(scope: Scope, key: FactKey): Fact | undefined {
    const entry = this.entries.get(`${scopeKeyOf(scope)}|${keyText(key)}`);
    return entry && entry.expiresAt > this.now() ? entry.fact : undefined;
  }

  /** Calls `wake` whenever a fact is filed under one of `keys`; returns what stops that. */
  watch(scope: Scope, keys: readonly FactKey[], wake: () => void): () => void {
    const fulls = keys.map((key) => `${scopeKeyOf(scope)}|${keyText(key)}`);
    for (const full of fulls) {
      const set = this.waiters.get(full) ?? new Set();
      set.add(wake);
      this.waiters.set(full, set);
    }
    return () => {
      for (const full of fulls) {
        const set = this.waiters.get(full);
        set?.delete(wake);
        if (set?.size === 0) this.waiters.delete(full);
      }
    };
  }

  get size(): number {
    return this.entries.size;
  }

  private evict(scope: string): void {
    const keys = this.perScope.get(scope)!;
    while (keys.size > this.limits.perType) this.drop(keys.values().next().value!);
    while (this.entries.size > this.limits.total) this.drop(this.entries.keys().next().value!);
  }

  private drop(full: string): void {
    const entry = this.entries.get(full);
    this.entries.delete(full);
    if (entry) this.perScope.get(entry.scope)?.delete(full);
  }
}
