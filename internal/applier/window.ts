// The apply window: while an apply runs, and 10 s after, a live write is judged by who wrote
// it (applier-claims.md, "The apply window"). The applier's own write of the commit it applies
// is its echo, which Git already holds; a write by the applier over a newer API edit is a late
// apply, withheld so Git keeps the edit and a Repair puts it back on the cluster. Only proof
// withholds: managedFields times resolve to the second, so anything that could be the edit
// itself is mirrored.

/** The field managers each applier writes as. */
export const applierManagers = {
  Flux: ["kustomize-controller"],
  ArgoCD: ["argocd-controller", "argocd-application-controller"],
} as const;

export interface FieldsEntry {
  manager?: string;
  time?: string;
  subresource?: string;
}

export interface WindowFacts {
  /** The applier's managers. */
  managers: readonly string[];
  /** The earliest send of every window still open or carried, when one is; undefined: none. */
  earliestSend?: Date;
  /** When the API side edited this object in the window, if it did. */
  editedAt?: Date;
}

export type WriteVerdict =
  /** The applier's apply landing on an object nobody edited: not mirrored. */
  | "echo"
  /** The applier's write over a newer API edit: not mirrored, and a Repair is due. */
  | "withheld"
  /** The applier and another manager in the same second: mirrored, and remembered as an edit. */
  | "ambiguous"
  /** The applier's managers alone with no window open: mirrored, counted as late. */
  | "late"
  /** Anybody else's write, or the API's undo: mirrored. */
  | "edit";

const seconds = (at: Date | string) => Math.floor(new Date(at).getTime() / 1000);

/** Judges one live write (the object's managedFields as it arrived) against the window. */
export function judgeWrite(entries: readonly FieldsEntry[], facts: WindowFacts): WriteVerdict {
  // Status writes are never a mirrored change, so they say nothing of who wrote the content.
  const timed = entries.filter((e) => e.time !== undefined && e.subresource !== "status");
  if (timed.length === 0) return "edit";
  const newest = Math.max(...timed.map((e) => seconds(e.time!)));
  const writers = new Set(timed.filter((e) => seconds(e.time!) === newest).map((e) => e.manager ?? ""));
  const applier = [...writers].filter((m) => facts.managers.includes(m));
  if (applier.length === 0) return "edit";
  if (applier.length < writers.size) return "ambiguous";
  if (facts.earliestSend === undefined) return "late";
  // An applier entry older than the send is no write of this apply: an edit that undid fields.
  if (newest < seconds(facts.earliestSend)) return "edit";
  if (facts.editedAt === undefined) return "echo";
  // The edit arrived first in resourceVersion order, so an applier entry in its second came
  // after it; one older than the edit is the API's undo leaving an earlier apply's entry newest.
  return newest >= seconds(facts.editedAt) ? "withheld" : "edit";
}
