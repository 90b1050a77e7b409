// Resume cursors in Redis, one key per collection with the cursor TTL. A save is written
// behind, coalesced per collection, so the watch never waits on Redis; a load that finds Redis
// away answers with no cursor, and the reconnect takes a fresh snapshot instead.
//
// A save is fenced like the branch's durable queue (writelog.ts): it lands only while the
// branch's holder key names the token of the process saving it, so a replica that lost the
// branch and woke cannot move the cursors the new holder resumes from after a crash of its own.
// It never claims the holder key: the new holder's worker does, as it reads the queue.
import type { Logger } from "../telemetry/logger.ts";
import { cursorKeyText, cursorTtlMs, type CursorKey, type CursorStore } from "../watch/cursor.ts";
import type { RedisConnection } from "./connection.ts";

/**
 * Where a GitTarget's cursors are fenced: its branch's holder key and this process's token for
 * the branch, or why there is none (a GitTarget gone, a branch held elsewhere): no save then.
 */
export type CursorFence = (targetUid: string) => { holderKey: string; token: string } | { refused: string };

/** A save under the holder's token: KEYS[1] the cursor, KEYS[2] the holder key; ARGV token, rv, TTL. */
const saveScript = `
local holder = redis.call('GET', KEYS[2])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1`;

interface FencedCursorClient {
  gitopsreverserFencedCursor(...args: (string | number)[]): Promise<number>;
}

/** Every cursor key starts with it (a test rewinds the cursors a killed process left). */
export const cursorKeyPrefix = "gitopsreverser:cursor:";
/** How long a save waits for the ones after it, so a burst of events is one write. */
const flushDelayMs = 200;

export class RedisCursorStore implements CursorStore {
  /** The cursors to write, by their Redis key: the last resourceVersion saved for each. */
  private readonly pending = new Map<string, { key: CursorKey; rv: string }>();
  private flushing: Promise<void> | undefined;
  private readonly client: FencedCursorClient;

  constructor(
    private readonly redis: RedisConnection,
    private readonly logger: Logger,
    private readonly fence: CursorFence,
    private readonly ttlMs = cursorTtlMs,
  ) {
    redis.client.defineCommand("gitopsreverserFencedCursor", { numberOfKeys: 2, lua: saveScript });
    this.client = redis.client as unknown as FencedCursorClient;
  }

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
    const text = cursorKeyPrefix + cursorKeyText(key);
    this.pending.set(text, { key, rv: resourceVersion });
    this.flushing ??= new Promise<void>((resolve) => setTimeout(resolve, flushDelayMs)).then(() =>
      this.flush(),
    );
  }

  forget(key: CursorKey): void {
    const text = cursorKeyPrefix + cursorKeyText(key);
    this.pending.delete(text);
    this.redis.client.del(text).catch(() => undefined);
  }

  /**
   * Writes every pending cursor at once, each under its branch's fence; one that fails or is
   * fenced is a cursor not moved, nothing more: the next reconnect resumes from an older one.
   */
  private async flush(): Promise<void> {
    const batch = [...this.pending];
    this.pending.clear();
    this.flushing = undefined;
    await Promise.allSettled(batch.map(([text, { key, rv }]) => this.write(text, rv, key)));
  }

  private async write(text: string, rv: string, key: CursorKey): Promise<void> {
    const fence = this.fence(key.targetUid);
    if ("refused" in fence) {
      this.logger.debug("resume cursor not saved", { cursor: text, reason: fence.refused });
      return;
    }
    const saved = await this.client.gitopsreverserFencedCursor(
      text,
      fence.holderKey,
      fence.token,
      rv,
      this.ttlMs,
    );
    if (saved === 0)
      this.logger.debug("resume cursor not saved: another process holds its branch", { cursor: text });
  }
}
