// kstatus-compatible conditions, in the metav1.Condition shape.

export type ConditionStatus = "True" | "False" | "Unknown";

export interface Condition {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

/** A condition as a reconciler decides it: the transition time is the writer's business. */
export type ConditionUpdate = Omit<Condition, "lastTransitionTime">;

export function findCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/**
 * Sets one condition, keeping its lastTransitionTime unless its status changes: the time says
 * when the status last flipped, not when the controller last looked. Other conditions keep
 * their place; a new one is appended.
 */
export function setCondition(
  conditions: readonly Condition[],
  update: ConditionUpdate,
  now: Date,
): Condition[] {
  const current = findCondition(conditions, update.type);
  const lastTransitionTime =
    current && current.status === update.status ? current.lastTransitionTime : now.toISOString();
  const next: Condition = { ...update, lastTransitionTime };
  return current ? conditions.map((c) => (c.type === update.type ? next : c)) : [...conditions, next];
}

/** Sets every condition in `updates`, in order. */
export function setConditions(
  conditions: readonly Condition[],
  updates: readonly ConditionUpdate[],
  now: Date,
): Condition[] {
  return updates.reduce<Condition[]>((all, update) => setCondition(all, update, now), [...conditions]);
}

/**
 * The kstatus trio: Ready with the given status, and Reconciling and Stalled true or false.
 * Ready always carries the message; the other two carry it only while they are true.
 */
function trio(
  ready: ConditionUpdate["status"],
  reconciling: boolean,
  stalled: boolean,
  reason: string,
  message: string,
  generation: number | undefined,
): ConditionUpdate[] {
  const condition = (type: string, status: ConditionUpdate["status"], carries: boolean): ConditionUpdate => ({
    type,
    status,
    reason,
    message: carries ? message : "",
    observedGeneration: generation,
  });
  return [
    condition("Ready", ready, true),
    condition("Reconciling", reconciling ? "True" : "False", reconciling),
    condition("Stalled", stalled ? "True" : "False", stalled),
  ];
}

/** The kstatus trio for a reconcile that reached its goal. */
export function readyTrio(
  reason: string,
  message: string,
  generation: number | undefined,
): ConditionUpdate[] {
  return trio("True", false, false, reason, message, generation);
}

/** The kstatus trio for work still under way, which is expected to finish on its own. */
export function progressingTrio(
  reason: string,
  message: string,
  generation: number | undefined,
): ConditionUpdate[] {
  return trio("Unknown", true, false, reason, message, generation);
}

/**
 * The kstatus trio for work that failed and is retried on its own schedule: not Ready, still
 * reconciling, and not stalled, because nobody has to do anything for it to recover.
 */
export function retryingTrio(
  reason: string,
  message: string,
  generation: number | undefined,
): ConditionUpdate[] {
  return trio("False", true, false, reason, message, generation);
}

/**
 * The kstatus trio for an object a person suspended: not Ready, because it is not doing its job,
 * and neither reconciling nor stalled, because nothing is under way and nothing is broken: it
 * waits for that person to resume it.
 */
export function suspendedTrio(
  reason: string,
  message: string,
  generation: number | undefined,
): ConditionUpdate[] {
  return trio("False", false, false, reason, message, generation);
}

/** The kstatus trio for a block only a human can clear. */
export function stalledTrio(
  reason: string,
  message: string,
  generation: number | undefined,
): ConditionUpdate[] {
  return trio("False", false, true, reason, message, generation);
}
