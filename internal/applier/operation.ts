// An apply operation as the claim's status records it (status.operation).
import type { ApplyOperation } from "../../generated/v1alpha3/index.ts";

const ended = new Set<ApplyOperation["phase"]>(["Succeeded", "Failed"]);

/** Recorded and not yet proved ended: Requested, Running, Settling or Unresolved. */
export function inFlight(operation: ApplyOperation): boolean {
  return operation.phase !== undefined && !ended.has(operation.phase);
}

/** The operation ended as Failed, for a reason the message gives. */
export function failed(operation: ApplyOperation, now: Date, message: string): ApplyOperation {
  return { ...operation, phase: "Failed", completedAt: now.toISOString(), message };
}
