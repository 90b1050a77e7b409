// What a branch worker reports: the state every GitTarget on its branch shows, and the metrics.
// Its own file, below the worker's parts, so a decision reads it without importing them.
import type { Fault } from "../engine/gitexec.ts";
import type { QueueState } from "../queue/durable.ts";

/** What every GitTarget on the branch reports of its worker, and what the metrics show. */
export interface BranchState {
  retainedWrites: number;
  retainedBytes: number;
  intakePaused: boolean;
  outage?: Outage;
  contention?: Contention;
  /** Whether the durable write queue keeps the branch's accepted writes; absent without one. */
  durableQueue?: QueueState;
  /** On a branch pushed to a review ref: the last push that landed there; absent before one. */
  reviewPush?: ReviewPush;
}

/** What was pushed where, on a branch pushed for review (GitBranch spec.push.refspec). */
export interface ReviewPush {
  /** The review ref, such as refs/for/main. */
  ref: string;
  commit: string;
  at: Date;
}

/** The branch keeps moving while the worker pushes: since when, and how often it did. */
export interface Contention {
  since: Date;
  /** How many times the branch moved under a push since the last one that landed. */
  moves: number;
  /** When the next publication may start. */
  nextAttemptAt: number;
}

/** The remote failing: since when, why, and when the next attempt is due. */
export interface Outage {
  /** When the first failure of this run of failures happened. */
  since: Date;
  /** What the last attempt failed on. */
  error: string;
  /** When the next attempt is due, in milliseconds since the epoch. */
  nextAttemptAt: number;
  /** The last attempt found no parent to create the write branch from: parent recovery. */
  parentMissing?: boolean;
  /** "local" when the last attempt failed on the local clone, which was reset; the remote's otherwise. */
  fault?: Fault;
}
