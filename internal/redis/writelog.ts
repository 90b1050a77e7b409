// The durable write queue's log in Redis (or Valkey): one Stream per GitBranch, whose entries
// each hold one accepted live write. Appends and trims refresh a week's expiry, so the log of a
// GitBranch deleted while its remote was away goes with time instead of staying forever. Redis
// away, a call fails at once (the connection queues nothing), and the worker goes on from memory.
//
// The log is fenced (fence.ts): every append and trim is one Lua script that goes on only while
// the branch's epoch is still the one this process's holding claimed, so a replica that lost the
// branch and woke (from a freeze, a partition) neither adds to the log nor trims what the new
// holder still needs.
import type { Redis } from "ioredis";
import { LogFenced, type LogEntry, type WriteLog } from "../git/index.ts";
import type { FenceToken } from "../types/fence.ts";
import type { RedisConnection } from "./connection.ts";
import { BranchEpochs, Fenced, epochGuard, fenceExpiryMs, type Fence } from "./fence.ts";

const keyPrefix = "gitopsreverser:writes:";
/** A log nobody appends to or trims for this long is let go, with its fence. */
const idleExpiryMs = fenceExpiryMs;
const field = "write";
/** How many entries one read of a takeover's backlog asks for. */
const pageSize = 500;

/** The Stream key of a GitBranch's log: the same on every replica, so whoever holds the branch finds it. */
export const writeLogKey = (branchKey: string) => keyPrefix + branchKey;
// Both scripts start with the epoch guard: KEYS[1] the epoch key, KEYS[2] the stream; ARGV[1] the
// epoch, ARGV[2] the token, ARGV[3] the stream's expiry.

/** An append (ARGV[4..]: the entry's fields) under the holding's epoch. */
const appendScript = `${epochGuard}
local id = redis.call('XADD', KEYS[2], '*', unpack(ARGV, 4))
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return id`;

/** A trim (ARGV[4]: the MINID) under the holding's epoch. */
const trimScript = `${epochGuard}
redis.call('XTRIM', KEYS[2], 'MINID', ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1`;

/** The client with the two scripts defined on it (EVALSHA, loaded again after a restart of Redis). */
interface FencedClient {
  gitopsreverserFencedAppend(...args: (string | number)[]): Promise<string>;
  gitopsreverserFencedTrim(...args: (string | number)[]): Promise<number>;
}

function fencedClient(client: Redis): FencedClient {
  client.defineCommand("gitopsreverserFencedAppend", { numberOfKeys: 2, lua: appendScript });
  client.defineCommand("gitopsreverserFencedTrim", { numberOfKeys: 2, lua: trimScript });
  return client as unknown as FencedClient;
}

export class RedisWriteLog implements WriteLog {
  readonly where: string;
  private readonly key: string;
  private readonly client: FencedClient;
  private readonly epochs: BranchEpochs;

  /** `fence` gives this process's token for the branch now (types/fence.ts). */
  constructor(
    private readonly redis: RedisConnection,
    private readonly branchKey: string,
    private readonly fence: () => FenceToken,
  ) {
    this.key = writeLogKey(branchKey);
    this.where = `Redis at ${redis.address}, stream ${this.key}`;
    this.client = fencedClient(redis.client);
    this.epochs = BranchEpochs.of(redis);
  }

  async append(value: string): Promise<string> {
    const fields = [field, value, ...this.redis.seal.fields(this.key, value)];
    const fence = await this.holding();
    return this.fenced(() =>
      this.client.gitopsreverserFencedAppend(
        fence.key,
        this.key,
        fence.epoch,
        fence.token,
        idleExpiryMs,
        ...fields,
      ),
    );
  }

  async read(): Promise<LogEntry[]> {
    // The read is a takeover's: it claims the branch's epoch before anything is replayed.
    await this.holding();
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
    const fence = await this.holding();
    await this.fenced(() =>
      this.client.gitopsreverserFencedTrim(
        fence.key,
        this.key,
        fence.epoch,
        fence.token,
        idleExpiryMs,
        minId,
      ),
    );
  }

  /** This holding's fence for the branch (its epoch claimed at its first write); LogFenced when it holds the branch no longer. */
  private holding(): Promise<Fence> {
    return this.fenced(() => this.epochs.fence(this.branchKey, this.fence()));
  }

  /** A call under the fence: its refusal as LogFenced, the worker's own error for it. */
  private async fenced<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await BranchEpochs.guarded(this.where, call);
    } catch (err) {
      if (!(err instanceof Fenced)) throw err;
      throw new LogFenced(
        err.message.startsWith(this.where) ? err.message : `${this.where}: ${err.message}`,
        {
          cause: err,
        },
      );
    }
  }
}

function valueOf(fields: string[]): string | undefined {
  const index = fields.indexOf(field);
  return index >= 0 && index % 2 === 0 ? fields[index + 1] : undefined;
}
