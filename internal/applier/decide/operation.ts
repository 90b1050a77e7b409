// An apply operation as the claim's status records it (status.operation), and the tokens that
// mark the writes that start and end one.
import type { ApplyOperation } from "../../../generated/v1alpha3/kinds.ts";

const ended = new Set<ApplyOperation["phase"]>(["Succeeded", "Failed"]);

/** Recorded and not yet proved ended: Requested, Running, Settling or Unresolved. */
export function inFlight(operation: ApplyOperation): boolean {
  return operation.phase !== undefined && !ended.has(operation.phase);
}

/** The operation ended as Failed, for a reason the message gives. */
export function failed(operation: ApplyOperation, now: Date, message: string): ApplyOperation {
  return { ...operation, phase: "Failed", completedAt: now.toISOString(), message };
}

/** A token no other writer makes: the time, and a random suffix for two in one millisecond. */
export function newToken(now: Date): string {
  return `gitops-reverser-${now.toISOString()}-${Math.floor(Math.random() * 0xffffff).toString(16)}`;
}
