// The durable write queue's log in Redis (or Valkey): one Stream per GitBranch, whose entries
// each hold one accepted live write. Appends and trims refresh a week's expiry, so the log of a
// GitBranch deleted while its remote was away goes with time instead of staying forever. Redis
// away, a call fails at once (the connection queues nothing), and the worker goes on from memory.
//
// The log is fenced: beside it a key names its holder, the fencing token of the process that
// holds the branch (types/fence.ts). A worker's first call on the log (a takeover's read) sets
// it; every append and trim is one Lua script that goes on only while the holder is still this
// process's token, so a replica that lost the branch and woke (from a freeze, a partition)
// neither adds to the log nor trims what the new holder still needs. Workers of one holding
// share its token: a worker replaced within the process is never fenced by its successor. A
// holder key gone (Redis lost its data, or the week passed) is taken by the next write, as the
// Lease says it may.
import type { Redis } from "ioredis";
import { LogFenced, type LogEntry, type WriteLog } from "../git/queue/writelog.ts";
import type { FenceToken } from "../types/fence.ts";
import type { RedisConnection } from "./connection.ts";

const keyPrefix = "gitopsreverser:writes:";
/** A log nobody appends to or trims for this long is let go. */
const idleExpiryMs = 7 * 24 * 60 * 60 * 1000;
const field = "write";
/** How many entries one read of a takeover's backlog asks for. */
const pageSize = 500;

/** The Stream key of a GitBranch's log: the same on every replica, so whoever holds the branch finds it. */
export const writeLogKey = (branchKey: string) => keyPrefix + branchKey;
/** The key naming the log's holder: the token of the process whose worker last read it. */
export const writeLogHolderKey = (branchKey: string) => `gitopsreverser:writes-holder:${branchKey}`;

/** The scripts' start: KEYS[1] the stream, KEYS[2] its holder key; ARGV[1] the token, ARGV[2] the expiry. */
const holderGuard = `
local holder = redis.call('GET', KEYS[2])
if holder and holder ~= ARGV[1] then
  return redis.error_reply('FENCED ' .. holder)
end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
`;

/** An append (ARGV[3..]: the entry's fields) under the holder's token. */
const appendScript = `${holderGuard}
local id = redis.call('XADD', KEYS[1], '*', unpack(ARGV, 3))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return id`;

/** A trim (ARGV[3]: the MINID) under the holder's token. */
const trimScript = `${holderGuard}
redis.call('XTRIM', KEYS[1], 'MINID', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
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
  private readonly holderKey: string;
  private readonly client: FencedClient;
  /** This worker's claim of the log, made at its first call; a failed claim is made again at the next. */
  private claimed: Promise<unknown> | undefined;

  /** `fence` gives this process's token for the branch now (types/fence.ts). */
  constructor(
    private readonly redis: RedisConnection,
    branchKey: string,
    private readonly fence: () => FenceToken,
  ) {
    this.key = writeLogKey(branchKey);
    this.holderKey = writeLogHolderKey(branchKey);
    this.where = `Redis at ${redis.address}, stream ${this.key}`;
    this.client = fencedClient(redis.client);
  }

  async append(value: string): Promise<string> {
    const fields = [field, value, ...this.redis.seal.fields(this.key, value)];
    await this.claim();
    const token = this.token();
    return this.fenced(() =>
      this.client.gitopsreverserFencedAppend(this.key, this.holderKey, token, idleExpiryMs, ...fields),
    );
  }

  async read(): Promise<LogEntry[]> {
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
    await this.claim();
    const token = this.token();
    await this.fenced(() =>
      this.client.gitopsreverserFencedTrim(this.key, this.holderKey, token, idleExpiryMs, minId),
    );
  }

  /** Makes this process the log's holder, once: from then on, a process that held it before writes nothing here. */
  private claim(): Promise<unknown> {
    this.claimed ??= Promise.resolve()
      .then(() => this.redis.client.set(this.holderKey, this.token(), "PX", idleExpiryMs))
      .catch((err: unknown) => {
        this.claimed = undefined;
        throw err;
      });
    return this.claimed;
  }

  /** This process's token for the branch; LogFenced when it holds the branch no longer. */
  private token(): string {
    const fence = this.fence();
    if ("refused" in fence) throw new LogFenced(`${this.where}: ${fence.refused}`);
    return fence.token;
  }

  /** A script's call, its FENCED answer as LogFenced. */
  private async fenced<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (err) {
      const holder = /^FENCED (.*)$/.exec((err as Error).message)?.[1];
      if (holder === undefined) throw err;
      throw new LogFenced(`${this.where} is held by ${holder} now: this process lost the branch`, {
        cause: err,
      });
    }
  }
}

function valueOf(fields: string[]): string | undefined {
  const index = fields.indexOf(field);
  return index >= 0 && index % 2 === 0 ? fields[index + 1] : undefined;
}
