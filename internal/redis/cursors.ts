// Resume cursors in Redis, one key per collection with the cursor TTL. A save is written
// behind, coalesced per collection, so the watch never waits on Redis; a load that finds Redis
// away answers with no cursor, and the reconnect takes a fresh snapshot instead.
//
// A save is fenced like the branch's durable queue (fence.ts): it lands only under the epoch of
// this process's holding of the GitTarget's branch, so a replica that lost the branch and woke
// cannot move the cursors the new holder would resume from after a crash of its own. A save is
// also a claim: the process after a restart moves its cursors from its first save on.
import type { FenceToken } from "../types/fence.ts";
import type { Logger } from "../telemetry/logger.ts";
import { cursorKeyText, cursorTtlMs, type CursorKey, type CursorStore } from "../watch/cursor.ts";
import type { RedisConnection } from "./connection.ts";
import { BranchEpochs, Fenced, epochGuard } from "./fence.ts";

/**
 * Where a GitTarget's cursors are fenced: its branch, and this process's token for it now; or
 * why none is saved (the GitTarget is gone).
 */
export type CursorFence = (
  targetUid: string,
) => { branchKey: string; token: FenceToken } | { refused: string };

/** A save under the holding's epoch: KEYS[1] the epoch key, KEYS[2] the cursor; ARGV[3] the resourceVersion, ARGV[4] the TTL. */
const saveScript = `${epochGuard}
redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4])
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
  private readonly epochs: BranchEpochs;

  constructor(
    private readonly redis: RedisConnection,
    private readonly logger: Logger,
    private readonly fence: CursorFence,
    private readonly ttlMs = cursorTtlMs,
  ) {
    redis.client.defineCommand("gitopsreverserFencedCursor", { numberOfKeys: 2, lua: saveScript });
    this.client = redis.client as unknown as FencedCursorClient;
    this.epochs = BranchEpochs.of(redis);
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
    this.pending.set(cursorKeyPrefix + cursorKeyText(key), { key, rv: resourceVersion });
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
    // One lookup of each GitTarget's branch per flush, however many of its collections saved.
    const targets = new Map<string, ReturnType<CursorFence>>();
    const targetOf = (uid: string) => {
      let target = targets.get(uid);
      if (!target) targets.set(uid, (target = this.fence(uid)));
      return target;
    };
    await Promise.all(batch.map(([text, { key, rv }]) => this.write(text, targetOf(key.targetUid), rv)));
  }

  private async write(text: string, target: ReturnType<CursorFence>, rv: string): Promise<void> {
    try {
      if ("refused" in target) throw new Fenced(target.refused);
      const fence = await this.epochs.fence(target.branchKey, target.token);
      await BranchEpochs.guarded(text, () =>
        this.client.gitopsreverserFencedCursor(fence.key, text, fence.epoch, fence.token, rv, this.ttlMs),
      );
    } catch (err) {
      // Fenced: another process holds the branch. Otherwise Redis is away: the connection
      // already said so, and the next reconnect initializes.
      if (err instanceof Fenced)
        this.logger.debug("resume cursor not saved", { cursor: text, reason: err.message });
    }
  }
}
