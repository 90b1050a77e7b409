// When a controller that proves credentials looks again. A success is re-proved at a steady
// pace; a block only a human can clear (a Secret we do not watch, a refused credential) is
// looked at again at a fixed, slower pace; a remote that may come back on its own is retried
// with backoff, through the controller's rate limiter.
import type { Result } from "../operator/controller.ts";
import {
  BucketRateLimiter,
  ItemExponentialRateLimiter,
  MaxOfRateLimiter,
  type RateLimiter,
} from "../operator/ratelimiter.ts";
import type { RandomSource } from "../timing/backoff.ts";
import type { Recheck } from "./describe.ts";

export interface RecheckIntervals {
  /** Between re-proofs of a credential that works. */
  steadyMs: number;
  /** Between looks at a credential a human must fix. */
  blockedMs: number;
  /** The first retry after a transient failure; it doubles up to backoffMaxMs. */
  backoffBaseMs: number;
  backoffMaxMs: number;
}

export const defaultRecheckIntervals: RecheckIntervals = {
  steadyMs: 5 * 60_000,
  blockedMs: 60_000,
  backoffBaseMs: 1_000,
  // Never wait longer for a transient failure than for a success's re-check.
  backoffMaxMs: 5 * 60_000,
};

/**
 * A GitBranch's: its push session is proved before its worker runs, so a process started while
 * its Git host is down has no worker until a proof answers. Its transient failures are looked at
 * again within 10 s however long the outage, as a running worker's are, so the first push comes
 * within seconds of the host's return, not up to 5 minutes later; one ls-remote each time.
 */
export const gitBranchRecheckIntervals: RecheckIntervals = {
  ...defaultRecheckIntervals,
  backoffMaxMs: 10_000,
};

/**
 * Thrown after the status is written, so the controller retries with backoff. A Git host that
 * is down would be asked again after 5 ms with the runtime's default limiter, so these
 * controllers start at a second.
 */
export class RetryWithBackoff extends Error {}

export function recheckRateLimiter(intervals: RecheckIntervals, random?: RandomSource): RateLimiter {
  return new MaxOfRateLimiter(
    new ItemExponentialRateLimiter(intervals.backoffBaseMs, intervals.backoffMaxMs, random),
    new BucketRateLimiter(10, 100),
  );
}

/** The reconcile's result for `recheck`; throws for backoff. `undefined` waits for a watch. */
export function nextPass(recheck: Recheck | undefined, intervals: RecheckIntervals, message: string): Result {
  switch (recheck) {
    case undefined:
      return {};
    case "steady":
      return { requeueAfterMs: intervals.steadyMs };
    case "blocked":
      return { requeueAfterMs: intervals.blockedMs };
    case "backoff":
      throw new RetryWithBackoff(message);
  }
}
