// One claim per applier. Every claim suspends under the same field manager, so two holding one
// Kustomization would take each other's resume for an external one and release each other's
// hold. Of the claims in line for one applier in one cluster, one holds it. In line: an eligible
// GitTarget references it, or it carries its finalizer (it holds the applier, or is handing it
// back), so an older claim that is not eligible keeps no younger one out, and a holder stays
// first until it has let go.
import type { NamespacedName } from "../../types/names.ts";

export interface InLine {
  claim: NamespacedName;
  creationTimestamp: string;
  /** Its status.operation is in flight. */
  operationInFlight: boolean;
  holdsFinalizer: boolean;
  eligible: boolean;
}

const rank = (c: InLine) => (c.operationInFlight ? 0 : c.holdsFinalizer ? 1 : 2);

/**
 * The order of the line: a claim with an operation in flight first, then one that carries its
 * finalizer, then the oldest (then by namespace and name). Claims not in line are left out.
 */
export function line(claims: readonly InLine[]): InLine[] {
  return claims
    .filter((c) => c.eligible || c.holdsFinalizer)
    .sort(
      (a, b) =>
        rank(a) - rank(b) ||
        a.creationTimestamp.localeCompare(b.creationTimestamp) ||
        a.claim.namespace.localeCompare(b.claim.namespace) ||
        a.claim.name.localeCompare(b.claim.name),
    );
}
