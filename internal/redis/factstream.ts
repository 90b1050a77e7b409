// --author-attribution-transport=redis: the fact streams as Redis Streams, one key per audit
// route and type. An append is one XADD per type per request, which trims what is older than
// the retention window; a key nobody appends to expires. One follower per process reads every
// followed stream with one blocking XREAD on its own connection, and a stream followed for the
// first time starts one retention window back, so a restarted process re-warms its index from
// what the window holds. When the followed set changes the blocked read is released
// (CLIENT UNBLOCK) so the next one names it. Redis away stops facts, never the watches: the
// follower retries and resumes each stream from the last entry it read.
import type { Redis } from "ioredis";
import type { Fact } from "../attribution/fact.ts";
import { streamKeyOf, type FactStream, type Retention, type StreamRef } from "../attribution/factstream.ts";
import type { Logger } from "../telemetry/logger.ts";
import type { Runnable } from "../operator/manager.ts";
import { followerLastSuccess } from "../telemetry/instruments.ts";
import { backoffDelay } from "../timing/backoff.ts";
import { sleep } from "../timing/sleep.ts";
import { transaction, type RedisConnection } from "./connection.ts";

const keyPrefix = "gitopsreverser:facts:";
/** The longest one read blocks, and so the longest a newly followed stream waits if an unblock is missed. */
const blockMs = 1_000;
const readCount = 1_000;

interface Followed {
  /** The last entry delivered: the next read starts after it. */
  lastId: string;
  deliver: (facts: Fact[]) => void;
}

type XReadReply = [key: string, entries: [id: string, fields: string[]][]][] | null;

export class RedisFactStream implements FactStream, Runnable {
  readonly name = "attribution-fact-follower";
  readonly needLeaderElection = false;
  private readonly followed = new Map<string, Followed>();
  private reader: Redis | undefined;
  private readerId: number | undefined;
  private reading = false;
  private wake: () => void = () => undefined;

  constructor(
    private readonly redis: RedisConnection,
    private readonly retention: Retention,
    private readonly logger: Logger,
  ) {}

  async append(stream: StreamRef, facts: Fact[]): Promise<void> {
    const key = keyPrefix + streamKeyOf(stream);
    const horizon = String(Math.max(0, Date.now() - this.retention.ms));
    const value = JSON.stringify(facts);
    await transaction(
      this.redis.client
        .multi()
        .xadd(key, "MINID", "~", horizon, "*", "facts", value, ...this.redis.seal.fields(key, value))
        .pexpire(key, 2 * this.retention.ms),
      "append",
    );
  }

  follow(stream: StreamRef, deliver: (facts: Fact[]) => void): () => void {
    const key = keyPrefix + streamKeyOf(stream);
    if (this.followed.has(key)) throw new Error(`${streamKeyOf(stream)} is followed already`);
    // Entry ids are milliseconds: one retention window back is what a late follower replays.
    this.followed.set(key, { lastId: `${Math.max(0, Date.now() - this.retention.ms)}-0`, deliver });
    this.changed();
    return () => {
      if (this.followed.get(key)?.deliver !== deliver) return;
      this.followed.delete(key);
      this.changed();
    };
  }

  async start(signal: AbortSignal): Promise<void> {
    const reader = this.redis.duplicate("fact-follower");
    this.reader = reader;
    reader.on("ready", () => {
      reader.client("ID").then(
        (id) => (this.readerId = Number(id)),
        () => (this.readerId = undefined),
      );
    });
    signal.addEventListener(
      "abort",
      () => {
        this.wake();
        reader.disconnect();
      },
      { once: true },
    );
    await reader.connect().catch(() => undefined);
    let failures = 0;
    while (!signal.aborted) {
      if (this.followed.size === 0) {
        await new Promise<void>((resolve) => (this.wake = resolve));
        continue;
      }
      try {
        this.deliver(await this.read(reader));
        followerLastSuccess.set(Date.now() / 1000);
        failures = 0;
      } catch (err) {
        if (signal.aborted) break;
        if (failures === 0)
          this.logger.error("the fact follower cannot read Redis; retrying", {
            error: (err as Error).message,
          });
        await sleep(backoffDelay({ baseMs: 200, maxMs: 5_000, jitter: "equal" }, failures++), signal);
      }
    }
  }

  private async read(reader: Redis): Promise<XReadReply> {
    const keys = [...this.followed.keys()];
    const ids = keys.map((key) => this.followed.get(key)!.lastId);
    this.reading = true;
    try {
      return await reader.xread("COUNT", readCount, "BLOCK", blockMs, "STREAMS", ...keys, ...ids);
    } finally {
      this.reading = false;
    }
  }

  private deliver(reply: XReadReply): void {
    for (const [key, entries] of reply ?? []) {
      const followed = this.followed.get(key);
      if (!followed) continue;
      for (const [id, fields] of entries) {
        followed.lastId = id;
        const refused = this.redis.seal.refusal(key, valueOf(fields), fields);
        if (refused) {
          this.redis.refuse("facts", key, id, refused);
          continue;
        }
        const facts = parseFacts(fields);
        if (facts) followed.deliver(facts);
      }
    }
  }

  /** The followed set changed: wake an idle loop, release a blocked read so the next names it. */
  private changed(): void {
    this.wake();
    if (this.reading && this.readerId !== undefined)
      this.redis.client.client("UNBLOCK", this.readerId).catch(() => undefined);
  }
}

/** The value of an entry's facts field, if it has one. */
function valueOf(fields: string[]): string | undefined {
  const index = fields.findIndex((f, i) => i % 2 === 0 && f === "facts");
  return index < 0 ? undefined : fields[index + 1];
}

/** An entry's facts; an entry this version cannot read is skipped, never guessed at. */
function parseFacts(fields: string[]): Fact[] | undefined {
  const value = valueOf(fields);
  if (value === undefined) return undefined;
  try {
    const facts: unknown = JSON.parse(value);
    return Array.isArray(facts) ? (facts as Fact[]) : undefined;
  } catch {
    return undefined;
  }
}
