// The operator's Redis (or Valkey), with --redis-addr: where resume cursors and, with the
// redis transport, attribution's fact streams live. It is optional but advised, and never a
// dependency of state capture: a command made while Redis is away fails at once instead of
// queueing, and each user decides what that costs (a cursor, a fact), while the connection
// keeps reconnecting. The readiness gate holds the pod not-ready until Redis has answered.
import { Redis, type ChainableCommander, type RedisOptions } from "ioredis";
import type { Logger } from "../telemetry/logger.ts";
import type { Runnable } from "../operator/manager.ts";
import { untilAborted } from "../timing/sleep.ts";
import { backoffDelay } from "../timing/backoff.ts";

/** host:port, [v6]:port, or a bare host on Redis's port. */
export function parseRedisAddress(address: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:]+))(?::(\d+))?$/.exec(address);
  const port = Number(match?.[3] ?? 6379);
  if (!match || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw new Error(`--redis-addr="${address}": use host:port, such as redis:6379`);
  }
  return { host: match[1] ?? match[2]!, port };
}

/**
 * Runs a MULTI transaction and returns each command's reply, in order; rejects with the first
 * command's error, or when Redis discarded the transaction, naming `what` it was for.
 */
export async function transaction(multi: ChainableCommander, what: string): Promise<unknown[]> {
  const results = await multi.exec();
  const failed = results?.find(([err]) => err);
  if (!results || failed) throw failed?.[0] ?? new Error(`the ${what} was discarded`);
  return results.map(([, reply]) => reply);
}

export class RedisConnection implements Runnable {
  readonly name = "redis";
  readonly needLeaderElection = false;
  readonly client: Redis;
  private answered = false;
  private down = false;

  constructor(
    readonly address: string,
    private readonly logger: Logger,
  ) {
    this.client = new Redis(this.options());
    this.watchHealth(this.client, "redis");
  }

  /** Another connection to the same Redis, for a blocking read; the caller disconnects it. */
  duplicate(name: string): Redis {
    const client = new Redis(this.options());
    this.watchHealth(client, name);
    return client;
  }

  /** The readiness check: failing until Redis has answered once since start. */
  readonly readiness = (): string | undefined =>
    this.answered ? undefined : `Redis at ${this.address} has not answered yet`;

  async start(signal: AbortSignal): Promise<void> {
    // A refused first connect is the same outage as a later one: the retry strategy goes on.
    await this.client.connect().catch(() => undefined);
    await untilAborted(signal);
    this.client.disconnect();
  }

  private options(): RedisOptions {
    return {
      ...parseRedisAddress(this.address),
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: (attempt) => backoffDelay({ baseMs: 200, maxMs: 5_000, jitter: "equal" }, attempt),
    };
  }

  /** Logs an outage once when it starts and once when it ends, not once per retry. */
  private watchHealth(client: Redis, name: string): void {
    client.on("ready", () => {
      this.answered = true;
      if (this.down) this.logger.info("Redis answers again", { address: this.address, connection: name });
      this.down = false;
    });
    client.on("error", (err: Error) => {
      if (this.down) return;
      this.down = true;
      this.logger.error(
        "Redis is unavailable; resume cursors (and redis-transport attribution) wait for it",
        {
          address: this.address,
          connection: name,
          error: err.message,
        },
      );
    });
  }
}
