// Whether the applier a live object's marks name (read by the watch side before sanitize strips
// them: internal/watch/appliedby.ts) is a claim's own (applier-claims.md, "Another applier's
// objects"). A folder a claim applies belongs to that claim's applier; an object another applier
// applies, mirrored into it, would be applied by both, and two appliers applying one object
// fight each other.
import type { AppliedBy } from "../../types/applied.ts";

/** Whether `owner` is `applier` itself; an Application named without a namespace matches by name. */
export function isApplier(owner: AppliedBy, applier: Required<AppliedBy>): boolean {
  return (
    owner.kind === applier.kind &&
    owner.name === applier.name &&
    (owner.namespace === undefined || owner.namespace === applier.namespace)
  );
}
