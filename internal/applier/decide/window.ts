// The apply window: while an apply runs, and 10 s after, a live write is judged by who wrote
// it (applier-claims.md, "The apply window"). The applier's own write of the commit it applies
// is its echo, which Git already holds; a write by the applier over a newer API edit is a late
// apply, withheld so Git keeps the edit and a Repair puts it back on the cluster. Only proof
// withholds: managedFields times resolve to the second, so where the writer is not known (the
// watch compares each event with the one before it: internal/watch/lastwriter.ts) anything that
// could be the edit itself is mirrored.

import type { FieldsEntry } from "../../types/applied.ts";
import type { ClaimKind } from "../../types/claims.ts";

/** The field managers each applier writes as. */
export const applierManagers = {
  Flux: ["kustomize-controller"],
  ArgoCD: ["argocd-controller", "argocd-application-controller"],
} as const;

/**
 * The field managers the applier of a claim of `kind` writes as: Flux's and Argo CD's are known;
 * a webhook applier's are the ones its WebhookClaim declares (spec.fieldManagers).
 */
export function applierManagersOf(kind: ClaimKind, declared: readonly string[] = []): readonly string[] {
  if (kind === "FluxClaim") return applierManagers.Flux;
  if (kind === "ArgoCDClaim") return applierManagers.ArgoCD;
  return declared;
}

export interface WindowFacts {
  /** The applier's managers. */
  managers: readonly string[];
  /** The earliest send of every window still open or carried, when one is; undefined: none. */
  earliestSend?: Date;
  /** When the API side edited this object in the window, if it did. */
  editedAt?: Date;
  /**
   * The manager that made this write, where the watch's order proved it (its entry alone moved
   * since the object's previous event); undefined: not known, and the tie rule decides.
   */
  writer?: string;
}

export type WriteVerdict =
  /** The applier's apply landing on an object nobody edited: not mirrored. */
  | "echo"
  /** The applier's write over a newer API edit: not mirrored, and a Repair is due. */
  | "withheld"
  /**
   * The applier and another manager in the same second, and the writer not known: mirrored, and
   * remembered as an edit.
   */
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
  if (facts.writer !== undefined) return judgeKnownWriter(timed, facts.writer, facts);
  if (timed.length === 0) return "edit";
  const newest = Math.max(...timed.map((e) => seconds(e.time!)));
  const writers = new Set(timed.filter((e) => seconds(e.time!) === newest).map((e) => e.manager ?? ""));
  const applier = [...writers].filter((m) => facts.managers.includes(m));
  if (applier.length === 0) return "edit";
  if (applier.length < writers.size) return "ambiguous";
  return judgeApplierWrite(newest, facts);
}

/**
 * A write whose writer the watch's order proved. Anybody else's is an edit, a tie in the same
 * second included; the applier's own moved its entry to this write's second, so it came after
 * every edit already seen of the object, and over one it is withheld.
 */
function judgeKnownWriter(timed: readonly FieldsEntry[], writer: string, facts: WindowFacts): WriteVerdict {
  if (!facts.managers.includes(writer)) return "edit";
  const own = timed.filter((e) => e.manager === writer).map((e) => seconds(e.time!));
  if (own.length === 0) return "edit";
  if (facts.earliestSend === undefined) return "late";
  if (Math.max(...own) < seconds(facts.earliestSend)) return "edit";
  return facts.editedAt === undefined ? "echo" : "withheld";
}

/** The applier's managers alone in the newest second, the writer not known. */
function judgeApplierWrite(newest: number, facts: WindowFacts): WriteVerdict {
  if (facts.earliestSend === undefined) return "late";
  // An applier entry older than the send is no write of this apply: an edit that undid fields.
  if (newest < seconds(facts.earliestSend)) return "edit";
  if (facts.editedAt === undefined) return "echo";
  // The edit arrived first in resourceVersion order, so an applier entry in its second came
  // after it; one older than the edit is the API's undo leaving an earlier apply's entry newest.
  return newest >= seconds(facts.editedAt) ? "withheld" : "edit";
}

/** What a Warning says of a tie the judge mirrored: the second, and the managers in it with their fields. */
export interface Tie {
  at: string;
  appliers: string[];
  others: { manager: string; fields: string[] }[];
}

/** The tie in `entries`' newest second between the applier's managers and others; undefined when there is none. */
export function tieOf(entries: readonly FieldsEntry[], managers: readonly string[]): Tie | undefined {
  const timed = entries.filter((e) => e.time !== undefined && e.subresource !== "status");
  if (timed.length === 0) return undefined;
  const newest = Math.max(...timed.map((e) => seconds(e.time!)));
  const inTie = timed.filter((e) => seconds(e.time!) === newest);
  const appliers = inTie.filter((e) => managers.includes(e.manager ?? "")).map((e) => e.manager!);
  const others = inTie
    .filter((e) => !managers.includes(e.manager ?? ""))
    .map((e) => ({ manager: e.manager ?? "(no manager)", fields: e.fields ?? [] }));
  if (appliers.length === 0 || others.length === 0) return undefined;
  return { at: new Date(newest * 1000).toISOString(), appliers: [...new Set(appliers)], others };
}

/** The Warning's note for a tie mirrored with no previous event to tell the writer: what to check, and what to do. */
export function tieNote(object: string, tie: Tie): string {
  const others = tie.others
    .map((o) => (o.fields.length > 0 ? `${o.manager} (${o.fields.join(", ")})` : o.manager))
    .join(" and ");
  return (
    `${object}: the applier (${tie.appliers.join(", ")}) and ${others} wrote it in the same second ` +
    `(${tie.at}), and no earlier event of the object was at hand to tell which wrote last, so the ` +
    `live object was mirrored to Git as it stands. If the applier's write overwrote a live value ` +
    `of those fields, set it again: the edit is then mirrored and kept.`
  );
}
