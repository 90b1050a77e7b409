// Events on condition transitions: what an operator user watches for (a branch claimed or lost,
// a folder refused and accepted again, a push failing and recovering, encryption refused) is
// already a condition, so an Event is recorded when the condition turns, never per reconcile. A
// condition that says Unknown neither starts nor ends a transition: a GitTarget whose worker
// restarts goes Unknown on its way back to False, and that is no second refusal.
import type { KubernetesObject } from "@kubernetes/client-node";
import type { Condition, ConditionUpdate } from "./conditions.ts";
import type { EventRecorder, EventType } from "./events.ts";

/** One Event to record about an object. */
export interface EventSpec {
  type: EventType;
  reason: string;
  action: string;
  note: string;
}

/** Known is True or False: what a transition is judged between. */
export type KnownCondition = Pick<ConditionUpdate, "type" | "status" | "reason" | "message">;

/** Which condition a rule watches, and the Event a change of it from `before` to `after` makes. */
export interface TransitionRule {
  type: string;
  decide(before: KnownCondition | undefined, after: KnownCondition): EventSpec | undefined;
}

const known = (c: KnownCondition | undefined): c is KnownCondition =>
  c !== undefined && c.status !== "Unknown";

/** The Events `rules` make of the conditions moving from `before` to `after`. */
export function transitionEvents(
  before: readonly KnownCondition[],
  after: readonly KnownCondition[],
  rules: readonly TransitionRule[],
): EventSpec[] {
  return rules.flatMap((rule) => {
    const now = after.find((c) => c.type === rule.type);
    if (!known(now)) return [];
    const event = rule.decide(
      before.find((c) => c.type === rule.type),
      now,
    );
    return event ? [event] : [];
  });
}

/** What is remembered of each type: the last known condition, kept through an Unknown. */
export function lastKnown(
  before: readonly KnownCondition[],
  after: readonly KnownCondition[],
): KnownCondition[] {
  const kept = new Map(before.filter(known).map((c) => [c.type, c]));
  for (const c of after.filter(known)) kept.set(c.type, c);
  return [...kept.values()];
}

type WithConditions = KubernetesObject & { status?: { conditions?: Condition[] } };

/**
 * Records the Events `rules` make of each status a reconciler writes. What each object's
 * conditions were is kept in memory, by uid, because the informer's copy may not show this
 * process's last write yet; an object first seen is judged against its stored status, so a
 * restart records nothing that did not change.
 */
export class ConditionEvents {
  private readonly seen = new Map<string, { uid: string; conditions: KnownCondition[] }>();

  constructor(
    private readonly recorder: Pick<EventRecorder, "record">,
    private readonly rules: readonly TransitionRule[],
  ) {}

  async observe(key: string, object: WithConditions, after: readonly ConditionUpdate[]): Promise<void> {
    const uid = object.metadata?.uid ?? "";
    const remembered = this.seen.get(key);
    const before =
      remembered?.uid === uid ? remembered.conditions : lastKnown([], object.status?.conditions ?? []);
    this.seen.set(key, { uid, conditions: lastKnown(before, after) });
    for (const event of transitionEvents(before, after, this.rules)) {
      await this.recorder.record(object, event.type, event.reason, event.action, event.note);
    }
  }

  /** The object is gone: what it said is forgotten. */
  forget(key: string): void {
    this.seen.delete(key);
  }
}
