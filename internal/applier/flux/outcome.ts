// How a Flux apply ended, read once the resume's token is handled (applier-claims.md, "The
// Flux applier, suspended", step 5). A handled token does not prove that a reconcile ran
// resumed: a suspend landing between the resume and the reconcile has the suspended return
// handle it, leaving the last apply's Ready. So the outcome also needs proof that a reconcile
// ran since the resume: Ready's lastTransitionTime moved (a real reconcile marks it Unknown
// first), or the top status.history entry moved past what the resume's apply returned.
import type { KustomizationView } from "./view.ts";

/** What the resume's own apply returned, to tell a later reconcile from none. */
export interface ResumeMark {
  readyTransition?: string;
  historyTop?: string;
}

/**
 * An operation recovered after a restart has no mark: the process that resumed it is gone. A
 * reconcile ran since it was requested when Ready moved, or the top history entry was
 * reconciled, in or after the second of its requestedAt (conditions keep whole seconds).
 */
export interface RecoveredMark {
  requestedAt: string;
}

export type FluxOutcome =
  | { kind: "succeeded"; revision: string; mismatch: boolean }
  | { kind: "failed"; reason: string; message: string };

/** Whether a Flux revision (`main@sha1:<sha>`, or a bare sha) names `commit`. */
export function revisionHolds(revision: string | undefined, commit: string): boolean {
  if (!revision) return false;
  const sha = revision.slice(revision.lastIndexOf(":") + 1);
  return sha === commit || revision === commit;
}

/**
 * The outcome table: a reconcile must have run since the resume; then Ready=True at the commit
 * succeeded, Ready=True at the revision the GitRepository holds now (the source moved on, the
 * residual race) succeeded with a mismatch, and anything else failed.
 */
export function fluxOutcome(
  k: KustomizationView,
  mark: ResumeMark | RecoveredMark,
  commit: string,
  sourceRevisionNow: string | undefined,
): FluxOutcome {
  if (!reconcileRan(k, mark)) {
    return { kind: "failed", reason: "NotApplied", message: "No reconcile ran since the resume." };
  }
  const ready = k.ready;
  if (ready?.status === "True") {
    const revision = k.lastAppliedRevision ?? "";
    if (revisionHolds(revision, commit)) return { kind: "succeeded", revision, mismatch: false };
    if (sourceRevisionNow && revision === sourceRevisionNow)
      return { kind: "succeeded", revision, mismatch: true };
    return {
      kind: "failed",
      reason: "RevisionLagged",
      message: `Applied ${revision || "no revision"}, not ${commit}: kustomize-controller's source lagged the artifact checked.`,
    };
  }
  if (ready?.status === "False" && ready.reason === "DependencyNotReady") {
    return {
      kind: "failed",
      reason: "DependencyNotReady",
      message: ready.message ?? "A dependency is not ready.",
    };
  }
  return {
    kind: "failed",
    reason: ready?.reason ?? "NoReady",
    message: ready?.message ?? "The Kustomization reported no Ready condition.",
  };
}

/** Whether a reconcile ran since the resume `mark` was taken at, or since a recovered request. */
export function reconcileRan(k: KustomizationView, mark: ResumeMark | RecoveredMark): boolean {
  if ("requestedAt" in mark) {
    const from = Math.floor(Date.parse(mark.requestedAt) / 1000) * 1000;
    const since = (at: string | undefined) => at !== undefined && Date.parse(at) >= from;
    return since(k.ready?.lastTransitionTime) || since(k.historyReconciledAt);
  }
  return (
    (k.ready?.lastTransitionTime !== undefined && k.ready.lastTransitionTime !== mark.readyTransition) ||
    (k.historyTop !== undefined && k.historyTop !== mark.historyTop)
  );
}
