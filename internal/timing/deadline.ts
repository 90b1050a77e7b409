// A deadline on a call that may never answer: a store that hangs instead of refusing (a
// half-open connection, a paused server) must cost its caller a bounded wait, never a stall.

/** `work`, or a rejection with `message` once `ms` have passed without it settling. */
export function within<T>(work: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}
