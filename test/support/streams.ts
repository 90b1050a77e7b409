import type { GitTargetEventStream, StreamItem } from "../../internal/watch/stream.ts";

/** The next item, or a failure naming what was awaited once the deadline passes. */
export async function nextItem(
  stream: GitTargetEventStream,
  what: string,
  timeoutMs = 20_000,
): Promise<StreamItem> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`timed out after ${timeoutMs}ms waiting for ${what}`)),
      timeoutMs,
    );
  });
  try {
    const result = await Promise.race([stream.next(), timeout]);
    if (result.done) throw new Error(`the stream ended while waiting for ${what}`);
    return result.value;
  } finally {
    clearTimeout(timer);
  }
}
