import { backoffDelay, type Backoff, type RandomSource } from "../timing/backoff.ts";

/** Decides how long to wait before an item that failed is processed again. */
export interface RateLimiter {
  /** The delay before the next attempt for `key`, counting this failure. */
  when(key: string): number;
  /** Forgets the key's failures, after it succeeded. */
  forget(key: string): void;
  /** How many failures of `key` have been counted since it was last forgotten. */
  failures(key: string): number;
}

/**
 * base * 2^failures, capped, with equal jitter: each failing key backs off on its own, as
 * client-go's does, and keys that failed together (one outage) do not come back together.
 */
export class ItemExponentialRateLimiter implements RateLimiter {
  private readonly counts = new Map<string, number>();
  private readonly policy: Backoff;

  constructor(
    baseMs = 5,
    maxMs = 1000 * 1000,
    private readonly random: RandomSource = Math.random,
  ) {
    this.policy = { baseMs, maxMs, jitter: "equal" };
  }

  when(key: string): number {
    const n = this.counts.get(key) ?? 0;
    this.counts.set(key, n + 1);
    return backoffDelay(this.policy, n, this.random);
  }

  forget(key: string): void {
    this.counts.delete(key);
  }

  failures(key: string): number {
    return this.counts.get(key) ?? 0;
  }
}

/**
 * A token bucket shared by every key: it bounds the overall retry rate, so a storm of
 * failing keys cannot hammer the API server even while each key's own backoff is short.
 */
export class BucketRateLimiter implements RateLimiter {
  private tokens: number;
  private last: number;

  constructor(
    private readonly qps = 10,
    private readonly burst = 100,
    private readonly now: () => number = Date.now,
  ) {
    this.tokens = burst;
    this.last = now();
  }

  when(): number {
    const now = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
    this.last = now;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens / this.qps) * 1000);
  }

  forget(): void {}

  failures(): number {
    return 0;
  }
}

/** The longest delay any of its limiters asks for: controller-runtime's default shape. */
export class MaxOfRateLimiter implements RateLimiter {
  private readonly limiters: RateLimiter[];

  constructor(...limiters: RateLimiter[]) {
    this.limiters = limiters;
  }

  when(key: string): number {
    return Math.max(...this.limiters.map((l) => l.when(key)));
  }

  forget(key: string): void {
    for (const l of this.limiters) l.forget(key);
  }

  failures(key: string): number {
    return Math.max(...this.limiters.map((l) => l.failures(key)));
  }
}

/** 5 ms doubling to 1000 s per key, jittered, and 10 retries a second (burst 100) overall. */
export function defaultControllerRateLimiter(): RateLimiter {
  return new MaxOfRateLimiter(new ItemExponentialRateLimiter(5, 1000 * 1000), new BucketRateLimiter(10, 100));
}
