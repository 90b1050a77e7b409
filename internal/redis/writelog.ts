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

/**
 * The branch's epoch: raised by each worker that starts writing the log, so a worker that holds
 * the branch no longer (a process frozen past its Lease, cut off from the API server) finds
 * every append and trim refused once another has started. The Lease fences pushes; this fences
 * the log, where a stale trim could remove what the new holder still needs.
 */
const epochPrefix = "gitopsreverser:epoch:";

/** An append, only while the epoch is this worker's: the stream's key, the epoch's, then epoch, expiry, fields. */
const appendScript = `
local epoch = redis.call('GET', KEYS[2])
if not epoch then return redis.error_reply('EPOCHLOST the branch epoch is gone (Redis lost its data)') end
if epoch ~= ARGV[1] then
  return redis.error_reply('FENCED another worker writes this branch log now (epoch ' .. epoch .. ', this worker ' .. ARGV[1] .. ')')
end
local id = redis.call('XADD', KEYS[1], '*', unpack(ARGV, 3))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return id`;

/** A trim, only while the epoch is this worker's: the keys as above, then epoch, expiry, MINID. */
const trimScript = `
local epoch = redis.call('GET', KEYS[2])
if not epoch then return redis.error_reply('EPOCHLOST the branch epoch is gone (Redis lost its data)') end
if epoch ~= ARGV[1] then
  return redis.error_reply('FENCED another worker writes this branch log now (epoch ' .. epoch .. ', this worker ' .. ARGV[1] .. ')')
end
redis.call('XTRIM', KEYS[1], 'MINID', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 1`;

export class RedisWriteLog implements WriteLog {
  readonly where: string;
  private readonly key: string;
  private readonly epochKey: string;
  /** This worker's epoch, raised once, at its first call on the log. */
  private epoch: Promise<string> | undefined;

  constructor(
    private readonly redis: RedisConnection,
    branchKey: string,
  ) {
    this.key = writeLogKey(branchKey);
    this.epochKey = epochPrefix + branchKey;
    this.where = `Redis at ${redis.address}, stream ${this.key}`;
  }

  async append(value: string): Promise<string> {
    const fields = [field, value, ...this.redis.seal.fields(this.key, value)];
    const id = await this.fenced((epoch) =>
      this.redis.client.eval(appendScript, 2, this.key, this.epochKey, epoch, idleExpiryMs, ...fields),
    );
    return id as string;
  }

  async read(): Promise<LogEntry[]> {
    // A takeover reads first: from now on, the worker that held the branch before writes nothing here.
    await this.claim();
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
    await this.fenced((epoch) =>
      this.redis.client.eval(trimScript, 2, this.key, this.epochKey, epoch, idleExpiryMs, minId),
    );
  }

  /**
   * A write under this worker's epoch. A Redis that lost the epoch (restarted without its data)
   * lost the log too: the worker raises a new epoch and writes again, once.
   */
  private async fenced(write: (epoch: string) => Promise<unknown>): Promise<unknown> {
    try {
      return await write(await this.claim());
    } catch (err) {
      if (!/EPOCHLOST/.test((err as Error).message)) throw err;
      this.epoch = undefined;
      return write(await this.claim());
    }
  }

  /** Raises the branch's epoch once, for this worker; a failed raise is tried again at the next call. */
  private claim(): Promise<string> {
    this.epoch ??= transaction(
      this.redis.client.multi().incr(this.epochKey).pexpire(this.epochKey, idleExpiryMs),
      "epoch",
    ).then(
      ([epoch]) => String(epoch),
      (err: unknown) => {
        this.epoch = undefined;
        throw err;
      },
    );
    return this.epoch;
  }
}

function valueOf(fields: string[]): string | undefined {
  const index = fields.indexOf(field);
  return index >= 0 && index % 2 === 0 ? fields[index + 1] : undefined;
}
