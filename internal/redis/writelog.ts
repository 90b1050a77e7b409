// The durable write queue's log in Redis (or Valkey): one Stream per GitBranch, whose entries
// each hold one accepted live write. Appends and trims refresh a week's expiry, so the log of a
// GitBranch deleted while its remote was away goes with time instead of staying forever. Redis
// away, a call fails at once (the connection queues nothing), and the worker goes on from memory.
import type { LogEntry, WriteLog } from "../git/queue/writelog.ts";
import { transaction, type RedisConnection } from "./connection.ts";

const keyPrefix = "gitopsreverser:writes:";
/** A log nobody appends to or trims for this long is let go. */
const idleExpiryMs = 7 * 24 * 60 * 60 * 1000;
const field = "write";
/** How many entries one read of a takeover's backlog asks for. */
const pageSize = 500;

/** The Stream key of a GitBranch's log: the same on every replica, so whoever holds the branch finds it. */
export const writeLogKey = (branchKey: string) => keyPrefix + branchKey;

export class RedisWriteLog implements WriteLog {
  readonly where: string;
  private readonly key: string;

  constructor(
    private readonly redis: RedisConnection,
    branchKey: string,
  ) {
    this.key = writeLogKey(branchKey);
    this.where = `Redis at ${redis.address}, stream ${this.key}`;
  }

  async append(value: string): Promise<string> {
    const [id] = await transaction(
      this.redis.client
        .multi()
        .xadd(this.key, "*", field, value, ...this.redis.seal.fields(this.key, value))
        .pexpire(this.key, idleExpiryMs),
      "append",
    );
    return id as string;
  }

  async read(): Promise<LogEntry[]> {
    const entries: LogEntry[] = [];
    for (let start = "-"; ;) {
      const page = await this.redis.client.xrange(this.key, start, "+", "COUNT", pageSize);
      for (const [id, fields] of page) {
        const value = valueOf(fields);
        const refused = this.redis.seal.refusal(this.key, value, fields);
        if (refused) this.redis.refuse("writes", this.key, id, refused);
        entries.push(refused ? [id, value, refused] : [id, value]);
      }
      if (page.length < pageSize) return entries;
      start = `(${page[page.length - 1]![0]}`;
    }
  }

  async trim(minId: string): Promise<void> {
    await transaction(
      this.redis.client.multi().xtrim(this.key, "MINID", minId).pexpire(this.key, idleExpiryMs),
      "trim",
    );
  }
}

function valueOf(fields: string[]): string | undefined {
  const index = fields.indexOf(field);
  return index >= 0 && index % 2 === 0 ? fields[index + 1] : undefined;
}
