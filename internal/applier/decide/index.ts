// The applier's pure decisions, and this folder's face: what the claims, the dispatchers, the
// reconcilers and the branch worker use of it. Which claim may act (eligibility) and which is
// first in line for one applier, the apply operation as a claim records it, which apply is due
// on a branch, how the apply window judges a live write, which snapshots wait while Git is ahead,
// and whose applier an object's marks name. No file here reads or writes anything: each is fed
// what its caller read, and its imports stay off the I/O rooms (hack/layers.ts).
export {
  judgeBinding,
  judgeConfig,
  type ClaimConfig,
  type ReferringTarget,
  type Verdict,
} from "./eligibility.ts";
export { line } from "./line.ts";
export { failed, inFlight, newToken } from "./operation.ts";
export {
  ApplyDue,
  precedence,
  type Applier,
  type Attempt,
  type Covered,
  type Outcome,
  type Reason,
  type Recovery,
} from "./due.ts";
export { applierManagersOf, judgeWrite, tieNote, tieOf, type WriteVerdict } from "./window.ts";
export { StaleSnapshots } from "./stale.ts";
export { isApplier } from "./owner.ts";
