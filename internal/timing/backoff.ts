// The one retry schedule shape of the operator: exponential, capped, and jittered, so every
// watch, informer, queue item and branch worker that failed on one outage does not retry at the
// same instant when it ends. A pure function of the attempt and a random source: a test pins it
// with a seeded source, production uses Math.random.

/** A source of numbers in [0, 1]: Math.random, or a seeded one in a test. */
export type RandomSource = () => number;

/**
 * How much of the delay is random. "full" draws it from [0, delay] (the widest spread, for a
 * retry that may as well come at once); "equal" from [delay/2, delay], keeping half of it as a
 * floor (for a server that is down, which a retry at once would only hammer); "none" is the
 * plain doubling.
 */
export type Jitter = "full" | "equal" | "none";

export interface Backoff {
  /** The delay before the first retry, before jitter. */
  baseMs: number;
  /** The cap the growing delay stops at, before jitter. */
  maxMs: number;
  /** How much each failure multiplies the delay by: 2 (doubling) unless a schedule grows slower. */
  factor?: number;
  jitter: Jitter;
}

/** The delay before retry number `attempt` (0 for the first), jittered by `random`. */
export function backoffDelay(policy: Backoff, attempt: number, random: RandomSource = Math.random): number {
  const ceiling = Math.min(policy.baseMs * (policy.factor ?? 2) ** attempt, policy.maxMs);
  switch (policy.jitter) {
    case "none":
      return Math.round(ceiling);
    case "full":
      return Math.round(ceiling * random());
    case "equal":
      return Math.round(ceiling / 2 + (ceiling / 2) * random());
  }
}
