// The operator's Redis (or Valkey), with --redis-addr: where resume cursors and, with the
// redis transport, attribution's fact streams live. It is optional but advised, and never a
// dependency of state capture: a command made while Redis is away fails at once instead of
// queueing, and each user decides what that costs (a cursor, a fact), while the connection
// keeps reconnecting. The readiness gate holds the pod not-ready until Redis has answered.
import { isIP } from "node:net";
import { Redis, type ChainableCommander, type RedisOptions } from "ioredis";
import type { Logger } from "../telemetry/logger.ts";
import type { Runnable } from "../operator/manager.ts";
import { untilAborted } from "../timing/sleep.ts";
import { backoffDelay } from "../timing/backoff.ts";
import { redisEntriesRefused } from "../telemetry/instruments.ts";
import { EntrySeal } from "./seal.ts";

/**
 * host:port, [v6]:port, or a bare host on Redis's port; `rediss://` before it asks for TLS (and
 * `redis://` for none, as plain host:port does).
 */
export function parseRedisAddress(address: string): { host: string; port: number; tls: boolean } {
  const scheme = /^(rediss?):\/\//.exec(address);
  const rest = scheme ? address.slice(scheme[0].length) : address;
  const match = /^(?:\[([^\]]+)\]|([^:/]+))(?::(\d+))?$/.exec(rest);
  const port = Number(match?.[3] ?? 6379);
  if (!match || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw new Error(
      `--redis-addr="${address}": use host:port, or rediss://host:port for TLS, such as redis:6379`,
    );
  }
  return { host: match[1] ?? match[2]!, port, tls: scheme?.[1] === "rediss" };
}

/**
 * How the operator proves itself to Redis, and Redis to it: an ACL user (or the default user)
 * and its password, and for rediss:// the CA that signed the server's certificate (the system's
 * otherwise) and a client certificate for a server that asks for one (tls-auth-clients).
 */
export interface RedisAccess {
  username?: string;
  password?: string;
  tls?: { ca?: string; cert?: string; key?: string };
  /** The key every stream entry is signed with, and checked against when read (seal.ts). */
  hmacKey?: string;
}

/**
 * What a Redis error says the operator should change, when it is about access rather than an
 * outage: a password asked for or refused, or a certificate not trusted.
 */
export function accessProblemOf(message: string): string | undefined {
  if (/NOAUTH/i.test(message))
    return "Redis asks for a password: set --redis-password (GITOPS_REVERSER_REDIS_PASSWORD; the chart's redis.auth.existingSecret)";
  if (/WRONGPASS|invalid (username-)?password|invalid password/i.test(message))
    return "Redis refused the username and password given (--redis-username, --redis-password)";
  if (/NOPERM/i.test(message))
    return `Redis's ACL user may not run a command the operator needs: ${message} (docs/operations.md lists them)`;
  if (
    /self[- ]signed|unable to (verify|get) .*certificate|certificate (has expired|is not yet valid)|altnames|ERR_TLS/i.test(
      message,
    )
  )
    return `Redis's TLS certificate is not trusted: ${message} (--redis-ca-file names the CA that signed it)`;
  return undefined;
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

  /** The last error that was about access, not an outage: what readiness tells. */
  private accessProblem: string | undefined;
  /** Signs what the operator writes to its streams and checks what it reads back. */
  readonly seal: EntrySeal;

  constructor(
    readonly address: string,
    private readonly logger: Logger,
    private readonly access: RedisAccess = {},
  ) {
    this.seal = new EntrySeal(access.hmacKey);
    this.client = new Redis(this.options());
    this.watchHealth(this.client, "redis");
  }

  /** Another connection to the same Redis, for a blocking read; the caller disconnects it. */
  duplicate(name: string): Redis {
    const client = new Redis(this.options());
    this.watchHealth(client, name);
    return client;
  }

  /**
   * An entry of `stream` that is not the operator's (seal.ts): dropped, never replayed or believed;
   * said at error, since someone wrote to Redis who should not have, and counted.
   */
  refuse(kind: "writes" | "facts", stream: string, id: string, why: string): void {
    redisEntriesRefused.inc({ stream: kind });
    this.logger.error("an entry in Redis is not the operator's: dropped, never used", {
      stream,
      id,
      why,
    });
  }

  /** The readiness check: failing until Redis has answered once since start. */
  readonly readiness = (): string | undefined =>
    this.answered
      ? undefined
      : `Redis at ${this.address} has not answered yet${this.accessProblem ? `: ${this.accessProblem}` : ""}`;

  async start(signal: AbortSignal): Promise<void> {
    // A refused first connect is the same outage as a later one: the retry strategy goes on.
    await this.client.connect().catch(() => undefined);
    await untilAborted(signal);
    this.client.disconnect();
  }

  private options(): RedisOptions {
    const { host, port, tls } = parseRedisAddress(this.address);
    const { username, password } = this.access;
    return {
      host,
      port,
      ...(username ? { username } : {}),
      ...(password ? { password } : {}),
      // A name is checked against the certificate; an IP address is checked as one (not sent as SNI).
      ...(tls ? { tls: { ...this.access.tls, ...(isIP(host) ? {} : { servername: host }) } } : {}),
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
      this.accessProblem = undefined;
      if (this.down) this.logger.info("Redis answers again", { address: this.address, connection: name });
      this.down = false;
    });
    client.on("error", (err: Error) => {
      const problem = accessProblemOf(err.message);
      if (this.down && problem === this.accessProblem) return;
      this.down = true;
      this.accessProblem = problem;
      this.logger.error(
        problem
          ? "Redis refuses the operator; resume cursors (and redis-transport attribution) wait for it"
          : "Redis is unavailable; resume cursors (and redis-transport attribution) wait for it",
        {
          address: this.address,
          connection: name,
          error: err.message,
          ...(problem ? { fix: problem } : {}),
        },
      );
    });
  }
}
