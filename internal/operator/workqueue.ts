import { defaultControllerRateLimiter, type RateLimiter } from "./ratelimiter.ts";

/**
 * A controller's queue of keys, with client-go's semantics:
 *
 * - A key waits in the queue at most once: adding it again while it waits does nothing.
 * - A key is handed to one worker at a time. Added while a worker holds it, it is queued
 *   again when that worker calls done(), so no change is lost and no key runs twice at once.
 * - addAfter() queues a key later; of several pending delays for one key, the earliest wins.
 * - addRateLimited() queues it after the rate limiter's delay; forget() resets that.
 */
export class WorkQueue {
  private readonly queue: string[] = [];
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly delayed = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private readonly waiters: ((key: string | undefined) => void)[] = [];
  private readonly drainWaiters: (() => void)[] = [];
  private shuttingDown = false;

  constructor(private readonly rateLimiter: RateLimiter = defaultControllerRateLimiter()) {}

  get length(): number {
    return this.queue.length;
  }

  add(key: string): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.processing.has(key)) return;
    this.enqueue(key);
  }

  addAfter(key: string, delayMs: number): void {
    if (this.shuttingDown) return;
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    const at = Date.now() + delayMs;
    const pending = this.delayed.get(key);
    if (pending && pending.at <= at) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      this.delayed.delete(key);
      this.add(key);
    }, delayMs);
    timer.unref();
    this.delayed.set(key, { at, timer });
  }

  addRateLimited(key: string): void {
    this.addAfter(key, this.rateLimiter.when(key));
  }

  forget(key: string): void {
    this.rateLimiter.forget(key);
  }

  /** How many times the key has been requeued for failing since it was last forgotten. */
  numRequeues(key: string): number {
    return this.rateLimiter.failures(key);
  }

  /** The next key, once there is one; undefined once the queue shuts down. */
  get(): Promise<string | undefined> {
    const key = this.queue.shift();
    if (key !== undefined) return Promise.resolve(this.take(key));
    if (this.shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Marks the key processed; if it was added meanwhile, it is queued again. */
  done(key: string): void {
    this.processing.delete(key);
    if (this.dirty.has(key) && !this.shuttingDown) this.enqueue(key);
    if (this.processing.size === 0) for (const resolve of this.drainWaiters.splice(0)) resolve();
  }

  /**
   * Stops handing out keys: pending delays are dropped, waiting workers get undefined, and the
   * returned promise resolves once every key a worker holds is done.
   */
  shutDown(): Promise<void> {
    this.shuttingDown = true;
    for (const { timer } of this.delayed.values()) clearTimeout(timer);
    this.delayed.clear();
    this.queue.length = 0;
    for (const resolve of this.waiters.splice(0)) resolve(undefined);
    if (this.processing.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  private enqueue(key: string): void {
    const waiter = this.waiters.shift();
    if (waiter) waiter(this.take(key));
    else this.queue.push(key);
  }

  private take(key: string): string {
    this.dirty.delete(key);
    this.processing.add(key);
    return key;
  }
}
