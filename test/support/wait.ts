/** Polls a condition until it holds or a deadline passes. Tests wait on conditions, never on fixed sleeps. */

/** Thrown by a probe when waiting longer cannot help, such as when the awaited process has exited. */
export class GiveUp extends Error {}

export interface EventuallyOptions {
  /** How long to keep trying, in milliseconds. */
  timeoutMs?: number;
  /**
   * Pause between attempts, in milliseconds. Without it the pause starts at 100 ms and grows by a
   * fifth each time to half a second: a condition that holds soon is seen soon, and a long wait
   * does not spend the machine on looks (at 100 ms, a 30 s wait over sixty files ran 18,000 git
   * processes), which the other test files running beside it need.
   */
  intervalMs?: number;
  /** Names the condition in the timeout error; a function is read at the timeout, so it can say what was seen last. */
  description?: string | (() => string);
}

/**
 * Calls `probe` until it returns a value other than `undefined`/`false` without throwing,
 * and returns that value. On timeout it throws with the last error or result, so a failing
 * test says what it was waiting for.
 */
export async function eventually<T>(
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  { timeoutMs = 30_000, intervalMs, description = "condition" }: EventuallyOptions = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let pause = intervalMs ?? firstPause;
  let lastError: unknown;
  for (;;) {
    try {
      const result = await probe();
      if (result !== undefined && result !== false) return result;
      lastError = undefined;
    } catch (err) {
      if (err instanceof GiveUp) throw err;
      lastError = err;
    }
    if (Date.now() >= deadline) {
      const cause = lastError instanceof Error ? `: ${lastError.message}` : "";
      const named = typeof description === "function" ? description() : description;
      throw new Error(`timed out after ${timeoutMs}ms waiting for ${named}${cause}`, {
        cause: lastError,
      });
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(pause, deadline - Date.now() + 1)));
    if (intervalMs === undefined) pause = Math.min(pause * 1.2, longestPause);
  }
}

/** The pauses between looks when a wait names no interval. */
const firstPause = 100;
const longestPause = 500;

/**
 * Waits until the clock is a second past `creationTimestamp`. The API server stamps creation
 * with a resolution of one second, so an object created after this is unambiguously younger.
 */
export async function untilYoungerThan(object: {
  metadata?: { creationTimestamp?: unknown };
}): Promise<void> {
  const created = Date.parse(String(object.metadata?.creationTimestamp));
  await eventually(() => Date.now() >= created + 1_000, { description: "the clock to pass a second" });
}
