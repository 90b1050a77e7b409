// The watch side of a rule's exclusions (rulestore/exclusions.ts): what one collection keeps
// out, and the facts of an event its decision is made on. The writer is the manager the watch's
// order proved (lastwriter.ts); where it could not, the managers whose content entries share the
// newest time are the candidates, and a write is a listed manager's only when all of them are.
import type { KubernetesObject } from "@kubernetes/client-node";
import {
  excludedBy,
  excludesAnything,
  objectPatternsKey,
  userMayExclude,
  type ExclusionReason,
  type RuleExclusions,
  type WriteFacts,
} from "../rulestore/exclusions.ts";
import { marksOf, type Writer } from "./lastwriter.ts";

/** The managers that may have made the write `object` carries: the proven one, else the newest. */
export function candidateWriters(writer: Writer, object: KubernetesObject): string[] {
  if ("known" in writer) return [writer.known];
  const marks = marksOf(object).filter((m) => m.time > 0);
  const newest = Math.max(0, ...marks.map((m) => m.time));
  return [...new Set(marks.filter((m) => m.time === newest).map((m) => m.manager))];
}

/** What one collection keeps out: the exclusions of every rule object that selects it. */
export class CollectionExclusions {
  private current: readonly (RuleExclusions | undefined)[];
  private active: boolean;

  constructor(rules: readonly (RuleExclusions | undefined)[] = []) {
    this.current = rules;
    this.active = excludesAnything(rules);
  }

  /** Takes a new plan's exclusions; true when the objects kept out changed, which a fresh snapshot settles. */
  set(rules: readonly (RuleExclusions | undefined)[]): boolean {
    const objectsChanged = objectPatternsKey(rules) !== objectPatternsKey(this.current);
    this.current = rules;
    this.active = excludesAnything(rules);
    return objectsChanged;
  }

  /** Whether `object` is never mirrored, whatever its write: its snapshot entry is kept, not swept. */
  object(object: KubernetesObject): boolean {
    return this.active && excludedBy(this.current, this.facts(object, true, [])) === "object";
  }

  /**
   * The facts of a live write, with the rules it is judged by now (a later plan does not change
   * a decision already under way), or undefined when nothing can keep it out.
   */
  judge(object: KubernetesObject, writer: Writer): Judgement | undefined {
    if (!this.active) return undefined;
    const rules = this.current;
    const facts = this.facts(object, false, candidateWriters(writer, object));
    return {
      reason: excludedBy(rules, facts),
      askUser: userMayExclude(rules, facts),
      withUser: (user) => (user === undefined ? undefined : excludedBy(rules, { ...facts, user })),
    };
  }

  private facts(object: KubernetesObject, removal: boolean, writers: string[]): WriteFacts {
    return {
      namespace: object.metadata?.namespace ?? "",
      name: object.metadata?.name ?? "",
      removal,
      writers,
    };
  }
}

/** A write's verdict as the watch reads it: now, or once attribution named its user. */
export interface Judgement {
  /** Why the write is kept out now, if it is. */
  reason: ExclusionReason | undefined;
  /** Whether its user, once known, could still keep it out. */
  askUser: boolean;
  /** Why the write is kept out, given its user. */
  withUser(user: string | undefined): ExclusionReason | undefined;
}
