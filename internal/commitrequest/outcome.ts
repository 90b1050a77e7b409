// How a CommitRequest's phase and outcome read as conditions: the seeds' outcome table, as one
// pure function. Automation stops on Ready=True or Stalled=True; Pushed=True with status.commit
// says a pushed commit exists, and Ready=True alone also covers the benign no-commit outcomes.
import type { ConditionUpdate } from "../operator/conditions.ts";
import type { EventSpec } from "../operator/conditionevents.ts";

/** Where a request is while it is served: each is a Reconciling reason. */
export type Phase =
  "Progressing" | "WaitingForWorker" | "WaitingForWindow" | "CollectingWindow" | "WaitingForPush";

export type Outcome =
  /** The push landed a commit carrying the request's window (or, with CommitEmpty, its empty commit). */
  | { reason: "Committed"; commit: string; branch: string }
  /** Nothing to add, as the push confirmed; `commit` is the empty commit CommitEmpty recorded. */
  | { reason: "AlreadyPresent"; commit?: string; branch?: string }
  /** No window of this author and target before the deadline; `commit` as above. */
  | { reason: "NoWindow"; commit?: string; branch?: string }
  | { reason: "WindowMismatch" }
  | { reason: "FinalizeFailed"; message: string }
  /** Refused before anything was attached: the message says what to change. */
  | { reason: "GitTargetNotFound" | "NotAdmitted" | "AuthorUnresolved"; message: string };

const messages: Record<Phase | "Saving" | "NoWindow" | "WindowMismatch" | "AlreadyPresent", string> = {
  Saving: "Accepted: its author is recorded, and it is handed to the GitTarget's branch worker.",
  Progressing: "The request is being served.",
  WaitingForWorker: "The GitTarget's branch worker has not taken the request yet.",
  WaitingForWindow: "Waiting for a window of this author and GitTarget to attach to.",
  CollectingWindow: "Attached: the window is collecting changes until the request's timers close it.",
  WaitingForPush: "The window closed; its commit waits to reach the remote.",
  NoWindow: "No window of this author and GitTarget opened before attachTimeout ran out; nothing was saved.",
  WindowMismatch: "The GitTarget's open window belongs to another author, so this request may not close it.",
  AlreadyPresent: "The window changed nothing, and the remote confirmed there was nothing to add.",
};

/** A request in progress: Ready=Unknown and Reconciling=True, the phase as their reason. */
export function phaseConditions(
  phase: Phase | "Saving",
  generation?: number,
  message?: string,
): ConditionUpdate[] {
  const at = (type: string, status: "True" | "False" | "Unknown") => ({
    type,
    status,
    reason: phase,
    message: message ?? messages[phase],
    observedGeneration: generation,
  });
  return [at("Ready", "Unknown"), at("Reconciling", "True"), at("Stalled", "False")];
}

/** The conditions of a finished request: the outcome table of commitrequest.md. */
export function outcomeConditions(outcome: Outcome, generation?: number): ConditionUpdate[] {
  const condition = (type: string, status: "True" | "False", message: string): ConditionUpdate => ({
    type,
    status,
    reason: outcome.reason,
    message,
    observedGeneration: generation,
  });
  if ("message" in outcome) {
    return [
      condition("Ready", "False", outcome.message),
      condition("Stalled", "True", outcome.message),
      condition("Reconciling", "False", outcome.message),
      condition("Pushed", "False", outcome.message),
    ];
  }
  const commit = "commit" in outcome ? outcome.commit : undefined;
  const message =
    outcome.reason === "Committed"
      ? `Commit ${outcome.commit} reached ${outcome.branch}.`
      : commit
        ? `${messages[outcome.reason]} The message was recorded in the empty commit ${commit}.`
        : messages[outcome.reason];
  const pushed = outcome.reason === "Committed" || commit !== undefined;
  return [
    condition("Ready", "True", message),
    condition("Stalled", "False", message),
    condition("Reconciling", "False", message),
    condition("Pushed", pushed ? "True" : "False", message),
  ];
}

/**
 * The Event a finished request records, reason the outcome's: Normal when it is Ready (a commit,
 * or a benign no-commit outcome), Warning when it failed or was refused; the note is Ready's.
 */
export function outcomeEvent(outcome: Outcome): EventSpec {
  const ready = outcomeConditions(outcome).find((c) => c.type === "Ready")!;
  return {
    type: ready.status === "True" ? "Normal" : "Warning",
    reason: outcome.reason,
    action: "Commit",
    note: ready.message,
  };
}
