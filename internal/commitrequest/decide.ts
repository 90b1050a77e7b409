// The next step for one CommitRequest, decided again from the object as it is stored, each
// time it is reconciled: one step at a time, so a restart, a conflict or a second path reading
// the same object never has to know what an earlier pass did. Pure; the core acts on it.
import type { CommitRequest } from "../../generated/v1alpha3/index.ts";
import { parseDuration } from "../types/units.ts";
import type { Report, SaveRequest } from "./desk.ts";
import type { Outcome, Phase } from "./outcome.ts";

/** The annotation a finished request is deleted after. */
export const deleteAfterAnnotation = "configbutler.ai/delete-after";

/** How long past its safety window a request no worker holds may still wait: 120 s. */
export const withdrawMarginMs = 120_000;

/** How often the owner re-sends its attach and reads the worker again: every couple of seconds. */
export const resendIntervalMs = 2_000;

export interface RequestFacts {
  now: number;
  /** Whether this path owns the request: its GitTarget's KubeProvider picks it. */
  owner: boolean;
  /** Whether the GitTarget it names exists. */
  targetFound: boolean;
  /** Whether this path deletes finished requests after their delete-after. */
  deletesFinished: boolean;
  /** What the worker that accepted its attach reports, if any does. */
  report: Report | undefined;
  /** How long a finished request is kept before it is deleted. */
  retentionMs: number;
  /** The margin past attachTimeout + maxDuration before an unheld request is withdrawn: 120 s. */
  withdrawMarginMs?: number;
}

export type Step =
  /** Nothing to do on this path now; look again after `afterMs`, if set. */
  | { kind: "wait"; afterMs?: number }
  | { kind: "targetNotFound" }
  /** Admission and the author, then the first status: Ready=Unknown (Saving). */
  | { kind: "claim" }
  | { kind: "finish"; outcome: Outcome }
  /** Past the safety window and not held by a worker: withdraw it, and fail it if that confirms. */
  | { kind: "withdraw" }
  /** Send (or re-send) the attach and report the phase. */
  | { kind: "progress"; phase: Phase; message?: string }
  | { kind: "stamp"; deleteAfter: Date }
  | { kind: "delete" };

const ms = (value: string | undefined, fallback: number) =>
  value === undefined ? fallback : parseDuration(value);

/** The request's window settings, with the API's defaults where it omits them. */
export function saveRequestOf(
  request: CommitRequest,
  target: string,
  actor: string | undefined,
): SaveRequest {
  const window = request.spec.window ?? {};
  return {
    id: request.metadata.uid ?? "",
    target,
    actor,
    mode: window.attach ?? "CurrentOrNext",
    attachTimeoutMs: ms(window.attachTimeout, 5_000),
    ...(window.idleTimeout !== undefined ? { idleTimeoutMs: parseDuration(window.idleTimeout) } : {}),
    maxDurationMs: ms(window.maxDuration, 2_000),
    ...(request.spec.message !== undefined ? { message: request.spec.message } : {}),
    whenNothingToCommit: request.spec.whenNothingToCommit ?? "Resolve",
  };
}

/** When a request no worker holds is withdrawn: attachTimeout + maxDuration + 120 s after creation. */
export function withdrawAt(request: CommitRequest, marginMs = withdrawMarginMs): number {
  const save = saveRequestOf(request, "", undefined);
  return createdAt(request) + save.attachTimeoutMs + save.maxDurationMs + marginMs;
}

// Typed as a Date, but a raw read serves the RFC 3339 string: new Date takes either.
const createdAt = (request: CommitRequest) =>
  new Date(request.metadata.creationTimestamp ?? 0).getTime() || 0;

const conditionOf = (request: CommitRequest, type: string) =>
  request.status?.conditions?.find((c) => c.type === type);

/** Finished: Ready=True or Stalled=True, where automation stops. */
export function finished(request: CommitRequest): boolean {
  return (
    conditionOf(request, "Ready")?.status === "True" || conditionOf(request, "Stalled")?.status === "True"
  );
}

/** Claimed: the owner wrote its first status (status.author and Ready=Unknown) and may have attached it. */
export function claimed(request: CommitRequest): boolean {
  return conditionOf(request, "Ready") !== undefined;
}

/** Whether a worker holds the request: only the worker ends it then. */
const held = (report: Report | undefined) =>
  report !== undefined &&
  "phase" in report &&
  (report.phase === "CollectingWindow" || report.phase === "WaitingForPush");

export function decideStep(request: CommitRequest, facts: RequestFacts): Step {
  const { now } = facts;
  if (finished(request)) return retention(request, facts);
  if (!claimed(request)) {
    if (!facts.targetFound) {
      // Any path may say so, once the wait for a window has passed, and only into an empty status.
      const due = createdAt(request) + saveRequestOf(request, "", undefined).attachTimeoutMs;
      if (request.status?.conditions?.length) return { kind: "wait" };
      return now >= due ? { kind: "targetNotFound" } : { kind: "wait", afterMs: due - now };
    }
    return facts.owner ? { kind: "claim" } : { kind: "wait" };
  }
  if (!facts.owner && facts.targetFound) return { kind: "wait" };
  const { report } = facts;
  if (report && "outcome" in report) return { kind: "finish", outcome: report.outcome };
  if (!held(report) && now >= withdrawAt(request, facts.withdrawMarginMs)) return { kind: "withdraw" };
  const phase = report && "phase" in report ? report : { phase: "WaitingForWorker" as const };
  return { kind: "progress", ...phase };
}

/** A finished request is stamped with when it may go, and deleted once that has passed. */
function retention(request: CommitRequest, facts: RequestFacts): Step {
  if (!facts.deletesFinished) return { kind: "wait" };
  const stamped = Date.parse(request.metadata.annotations?.[deleteAfterAnnotation] ?? "");
  if (Number.isNaN(stamped)) return { kind: "stamp", deleteAfter: new Date(facts.now + facts.retentionMs) };
  return facts.now >= stamped ? { kind: "delete" } : { kind: "wait", afterMs: stamped - facts.now };
}
