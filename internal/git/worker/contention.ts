// A remote that keeps moving while the worker pushes is contention, not an outage: the remote
// answers, somebody else simply lands first. Waiting on the outage schedule (10 s doubling to
// 5 minutes) would only let them win every race, so the worker fetches, replays and pushes again
// after a short jittered pause, and reports it as RemoteMoving, never as RemoteUnreachable.
import { backoffDelay, type Backoff, type RandomSource } from "../../timing/backoff.ts";
import type { BranchState, Contention } from "./report.ts";

/**
 * The pause before the next attempt on a branch that moved: 50–100 ms at first, growing slowly
 * to 250–500 ms. The jitter keeps two writers that lost to each other from colliding again.
 */
const movingPause: Backoff = { baseMs: 100, maxMs: 500, factor: 1.25, jitter: "equal" };

/** The pause after the branch moved `moves` times in a row. */
export function movingPauseMs(moves: number, random: RandomSource = Math.random): number {
  return backoffDelay(movingPause, Math.max(0, moves - 1), random);
}

export class ContentionSchedule {
  private contention: Contention | undefined;

  constructor(private readonly random: RandomSource = Math.random) {}

  /** A cycle ended with the branch still moving after `moves` more attempts. */
  moved(moves: number, now: number): Contention {
    const total = (this.contention?.moves ?? 0) + moves;
    this.contention = {
      since: this.contention?.since ?? new Date(now),
      moves: total,
      nextAttemptAt: now + movingPauseMs(total, this.random),
    };
    return this.contention;
  }

  /** A push landed, or the remote failed otherwise: the contention is over. */
  ended(): void {
    this.contention = undefined;
  }

  get current(): Contention | undefined {
    return this.contention;
  }

  /** When the next publication may start; 0 when the branch is not contended. */
  get dueAt(): number {
    return this.contention?.nextAttemptAt ?? 0;
  }
}

/** What every object on a contended branch reports. */
export interface ContentionFacts {
  since: Date;
  moves: number;
  retainedWrites: number;
}

/** The contention a worker's report describes, or undefined while its pushes land. */
export function contentionFacts(state: BranchState | undefined): ContentionFacts | undefined {
  if (!state?.contention || state.outage) return undefined;
  const { since, moves } = state.contention;
  return { since, moves, retainedWrites: state.retainedWrites };
}

export function contentionMessage(contention: ContentionFacts): string {
  return (
    `The branch moved ${contention.moves} times while we pushed, since ${contention.since.toISOString()}: ` +
    "somebody else keeps pushing to it. Each time the worker fetches the new tip and replays its writes " +
    `onto it, so nothing is overwritten; ${contention.retainedWrites} decided write(s) are kept and pushed ` +
    "again after a short pause, not on the outage schedule."
  );
}
