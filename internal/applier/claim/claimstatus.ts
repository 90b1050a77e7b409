// What both applier claims say in their conditions: Configured as judged, then InControl and
// the kstatus trio. Configured's first checks (nothing names the claim, a reference not judged
// yet or refused, the applier missing, another claim holding it) are the same for every kind;
// each kind adds its own after them.
import type { ApplierClaimStatus, ApplyOperation } from "../../../generated/v1alpha3/index.ts";
import { FluxClaimCondition as C, FluxClaimReason as R } from "../../../generated/v1alpha3/conditions.ts";
import { progressingTrio, readyTrio, stalledTrio, type ConditionUpdate } from "../../operator/conditions.ts";
import { keyOf, type NamespacedName } from "../../types/names.ts";
import { failed, inFlight, type Verdict } from "../decide/index.ts";

export type EventNote = { type: "Normal" | "Warning"; reason: string; note: string };

/**
 * What a claim kind's pass decides: the one step it takes, its conditions, the status fields it
 * sets (absent ones are kept as they are), its Event, and whether to look again soon (a token
 * or a write under way).
 */
export interface ClaimDecision<S extends { kind: string } = { kind: string }> {
  step: S;
  conditions: ConditionUpdate[];
  previousSuspendState?: "Suspended" | "Active" | null;
  operation?: ApplyOperation;
  event?: EventNote;
  soon: boolean;
}

/** What every claim's conditions are judged from. */
export interface ClaimFacts {
  claim: {
    metadata: { generation?: number; deletionTimestamp?: Date | string };
    status?: ApplierClaimStatus;
  };
  verdict: Verdict;
  /** The applier's cluster answered that it does not exist. */
  applierMissing: boolean;
  /** The applier was read. */
  applierRead: boolean;
  /** The first claim in line for the same applier, when it is another. */
  heldBy?: NamespacedName;
}

/**
 * Configured from what every kind shares, or undefined when the kind's own checks decide it.
 * `applier` names it in messages ("Kustomization shop/apps"), `kind` names a claim.
 */
export function sharedConfigured(
  facts: ClaimFacts,
  applier: string,
  kind: string,
): ConditionUpdate | undefined {
  const { verdict, heldBy } = facts;
  const at = configuredAt(facts);
  if (verdict.kind === "notReferenced")
    return at("Unknown", R.NotReferenced, "No GitTarget names this claim.");
  if (verdict.kind === "pending") return at("Unknown", verdict.reason, verdict.message);
  if (verdict.kind === "refused") return at("False", verdict.reason, verdict.message);
  if (facts.applierMissing) return at("False", R.ApplierNotFound, `${applier} does not exist.`);
  if (!facts.applierRead) return at("Unknown", R.Progressing, `${applier} could not be read yet.`);
  if (heldBy) {
    return at(
      "False",
      R.HeldByAnotherClaim,
      `${kind} ${keyOf(heldBy)} holds ${applier}; this claim does nothing until it lets go.`,
    );
  }
  return undefined;
}

/** The GitTargets a bound verdict names, for a message. */
export function boundNames(verdict: Verdict): string {
  return verdict.kind === "bound" ? verdict.targets.map((t) => keyOf(t.ref)).join(", ") : "";
}

/** A Configured condition at the claim's generation. */
export function configuredAt(facts: ClaimFacts) {
  return (status: ConditionUpdate["status"], reason: string, message: string): ConditionUpdate => ({
    type: C.Configured,
    status,
    reason,
    message,
    observedGeneration: facts.claim.metadata.generation,
  });
}

export type Trio = (reason: string, message: string, generation: number | undefined) => ConditionUpdate[];

/**
 * Configured as judged, then InControl and the kstatus trio, which says what InControl says
 * unless `trioSays` gives it another reason and message.
 */
export function conditionsOf(
  facts: ClaimFacts,
  configured: ConditionUpdate,
  status: ConditionUpdate["status"],
  reason: string,
  message: string,
  trio: Trio = progressingTrio,
  trioSays: { reason: string; message: string } = { reason, message },
): ConditionUpdate[] {
  const generation = facts.claim.metadata.generation;
  return [
    configured,
    { type: C.InControl, status, reason, message, observedGeneration: generation },
    ...trio(trioSays.reason, trioSays.message, generation),
  ];
}

/** After a hand-back: Ready as NotReferenced is, or stalled on the refusal that caused it. */
export function releasedTrio(facts: ClaimFacts): Trio {
  return facts.verdict.kind === "notReferenced" || facts.claim.metadata.deletionTimestamp
    ? readyTrio
    : stalledTrio;
}

/** How long a hand-back may try before the claim lets go and says where it left its applier. */
export const releaseBudgetMs = 10 * 60_000;

/** The decision that lets a claim go: Released, its finalizer removed. */
export interface Released {
  step: { kind: "removeFinalizer" };
  conditions: ConditionUpdate[];
  previousSuspendState: null;
  operation?: ApplyOperation;
  event?: EventNote;
  soon: false;
}

/**
 * What every kind's hand-back starts with: how it ends (`done`), with an operation still
 * recorded in flight ended Failed with the hold; and the hand-back already over (`over`) when
 * the applier is gone, or 10 minutes after it started (a Warning ReleaseFailed says where
 * `leftAs` left the applier).
 */
export function handBackFrame(
  facts: ClaimFacts,
  configured: ConditionUpdate,
  clock: { now: Date; releasingSince?: Date },
  applier: string,
  leftAs: () => string,
): { done: (how: string, event?: EventNote) => Released; over?: Released } {
  const operation = facts.claim.status?.operation;
  const abandoned =
    operation && inFlight(operation)
      ? {
          operation: failed(
            operation,
            clock.now,
            `The claim handed ${applier} back while this operation was in flight.`,
          ),
        }
      : {};
  const done = (how: string, event?: EventNote): Released => ({
    step: { kind: "removeFinalizer" },
    conditions: conditionsOf(facts, configured, "False", R.Released, how, releasedTrio(facts)),
    previousSuspendState: null,
    ...abandoned,
    ...(event ? { event } : {}),
    soon: false,
  });
  if (facts.applierMissing) return { done, over: done(`${applier} is gone; nothing to hand back.`) };
  const since = clock.releasingSince ?? clock.now;
  if (clock.now.getTime() - since.getTime() >= releaseBudgetMs) {
    const how = `The hand-back of ${applier} did not finish within 10 minutes; ${leftAs()}.`;
    return { done, over: done(how, { type: "Warning", reason: "ReleaseFailed", note: how }) };
  }
  return { done };
}
