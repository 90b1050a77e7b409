// How a branch worker's outage reads, for every object that reports it: each GitTarget on the
// branch and the GitBranch itself say it in the same words, from the one worker report.
import type { BranchState } from "./report.ts";
import type { Fault } from "../engine/gitexec.ts";

/** The branch's remote cannot be reached: since when, what failed, and what is kept. */
export interface OutageFacts {
  since: Date;
  error: string;
  retainedWrites: number;
  intakePaused: boolean;
  /** Whether the remote failed, or the local clone (which the worker resets). */
  fault: Fault;
}

/** The outage a worker's report describes, or undefined while its publications land. */
export function outageFacts(state: BranchState | undefined): OutageFacts | undefined {
  if (!state?.outage) return undefined;
  const { since, error, fault = "remote" } = state.outage;
  return { since, error, retainedWrites: state.retainedWrites, intakePaused: state.intakePaused, fault };
}

export function outageMessage(outage: OutageFacts): string {
  const paused = outage.intakePaused ? "; intake is paused until a push lands." : ".";
  if (outage.fault === "local")
    return (
      `Writing the local clone failed since ${outage.since.toISOString()}: ${outage.error}. ` +
      "This is a local fault of the operator's disk or clone, not of the Git remote: the clone is " +
      `reset and cloned afresh, and ${outage.retainedWrites} decided write(s) are kept and replayed onto it` +
      paused
    );
  return (
    `The Git remote has failed since ${outage.since.toISOString()}: ${outage.error}. ` +
    `${outage.retainedWrites} decided write(s) are kept and retried` +
    paused
  );
}
