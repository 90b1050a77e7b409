// The repeat guard: the observer never stacks Promotions on a Stage, and never retries a Freight
// it already failed to promote; deleting that failed Promotion is how a person asks it to retry.

/** A Promotion as the guard reads it. */
export interface PromotionView {
  name: string;
  stage: string;
  freight: string;
  /** status.phase; undefined while Kargo has not picked it up. */
  phase?: string;
  /** Made by the observer (app.kubernetes.io/managed-by=kargo-argocd-observer). */
  ours: boolean;
}

const terminal = new Set(["Succeeded", "Failed", "Errored", "Aborted"]);
const failed = new Set(["Failed", "Errored", "Aborted"]);

export type Guard =
  | { kind: "clear" }
  /** A Promotion of the Stage is still running (anyone's): this reconcile does nothing. */
  | { kind: "inFlight"; promotion: string }
  /** The observer's own Promotion of this Freight to this Stage failed: never recreated. */
  | { kind: "failedBefore"; promotion: string };

export function promotionGuard(promotions: readonly PromotionView[], stage: string, freight?: string): Guard {
  const running = promotions.find((p) => p.stage === stage && !terminal.has(p.phase ?? ""));
  if (running) return { kind: "inFlight", promotion: running.name };
  const tried =
    freight === undefined
      ? undefined
      : promotions.find(
          (p) => p.ours && p.stage === stage && p.freight === freight && failed.has(p.phase ?? ""),
        );
  return tried ? { kind: "failedBefore", promotion: tried.name } : { kind: "clear" };
}
