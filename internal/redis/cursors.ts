// Resume cursors in Redis, one key per collection with the cursor TTL. A save is written
// behind, coalesced per collection, so the watch never waits on Redis; a load that finds Redis
// away answers with no cursor, and the reconnect takes a fresh snapshot instead.
import type { Logger } from "../telemetry/logger.ts";
import { cursorKeyText, cursorTtlMs, type CursorKey, type CursorStore } from "../watch/cursor.ts";
import type { RedisConnection } from "./connection.ts";

/** Every cursor key starts with it (a test rewinds the cursors a killed process left). */
export const cursorKeyPrefix = "gitopsreverser:cursor:";
/** How long a save waits for the ones after it, so a burst of events is one write. */
const flushDelayMs = 200;

export class RedisCursorStore implements CursorStore {
  private readonly pending = new Map<string, string>();
  private flushing: Promise<void> | undefined;

  constructor(
    private readonly redis: RedisConnection,
    private readonly logger: Logger,
    private readonly ttlMs = cursorTtlMs,
  ) {}

  async load(key: CursorKey): Promise<string | undefined> {
    const text = cursorKeyPrefix + cursorKeyText(key);
    // What this process saved last is what a reconnect resumes from: let it reach Redis first.
    if (this.pending.has(text)) await this.flush();
    try {
      return (await this.redis.client.get(text)) ?? undefined;
    } catch (err) {
      this.logger.warn("resume cursor unreadable; the collection initializes again", {
        error: (err as Error).message,
      });
      return undefined;
    }
  }

  save(key: CursorKey, resourceVersion: string): void {
    this.pending.set(cursorKeyPrefix + cursorKeyText(key), resourceVersion);
    this.flushing ??= new Promise<void>((resolve) => setTimeout(resolve, flushDelayMs)).then(() =>
      this.flush(),
    );
  }

  forget(key: CursorKey): void {
    const text = cursorKeyPrefix + cursorKeyText(key);
    this.pending.delete(text);
    this.redis.client.del(text).catch(() => undefined);
  }

  /** Writes every pending cursor in one round trip; one that fails is a cursor lost, nothing more. */
  private async flush(): Promise<void> {
    const batch = [...this.pending];
    this.pending.clear();
    this.flushing = undefined;
    if (batch.length === 0) return;
    const pipeline = this.redis.client.pipeline();
    for (const [text, rv] of batch) pipeline.set(text, rv, "PX", this.ttlMs);
    try {
      await pipeline.exec();
    } catch {
      // Redis is away: the connection already said so, and the next reconnect initializes.
    }
  }
}
