import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Redis, type RedisOptions } from "ioredis";
import { freePort, startOnChosenPorts } from "./ports.ts";
import { ManagedProcess } from "./process.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "./reaper.ts";
import { eventually } from "./wait.ts";

/**
 * A guarded Redis: a password (requirepass) and TLS only, with this server certificate (PEM) and
 * the CA that signed it, which also vouches for client certificates when `clientCertificates`.
 */
export interface RedisGuard {
  password: string;
  tls: { cert: string; key: string; ca: string; clientCertificates?: boolean };
}

/** Debian's redis-server on a free loopback port, with persistence off. */
export class RedisServer {
  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly process: ManagedProcess,
    readonly guard?: RedisGuard,
  ) {}

  /**
   * Starts on `port` when given: a restart of one that was stopped, where its clients reconnect.
   * Otherwise on a port chosen for it, chosen again if another process took it first.
   */
  static start(port?: number, guard?: RedisGuard): Promise<RedisServer> {
    if (port !== undefined) return RedisServer.startOn(port, guard);
    return startOnChosenPorts(async () => RedisServer.startOn(await freePort(), guard));
  }

  private static async startOn(port: number, guard?: RedisGuard): Promise<RedisServer> {
    const dir = makeOwnedTempDir("redis");
    const guarded = guard ? guardArgs(dir, port, guard) : ["--port", String(port)];
    const proc = ManagedProcess.start({
      name: "redis-server",
      command: "redis-server",
      args: [
        "--bind",
        "127.0.0.1",
        ...guarded,
        "--dir",
        dir,
        "--save",
        "",
        "--appendonly",
        "no",
        "--daemonize",
        "no",
      ],
      logFile: join(dir, "redis.log"),
    });
    const server = new RedisServer(dir, port, proc, guard);
    try {
      await eventually(
        async () => {
          proc.assertRunning();
          const client = server.client({
            lazyConnect: true,
            maxRetriesPerRequest: 0,
            retryStrategy: () => null,
          });
          // Until the server listens, connecting fails: the probe's own failure says so, and
          // without a listener ioredis would also print it as an unhandled error event.
          client.on("error", () => undefined);
          try {
            await client.connect();
            return (await client.ping()) === "PONG";
          } finally {
            client.disconnect();
          }
        },
        { timeoutMs: 15_000, description: "redis-server to answer PING" },
      );
    } catch (err) {
      await server.stop();
      throw err;
    }
    return server;
  }

  /** `127.0.0.1:<port>` (`rediss://127.0.0.1:<port>` when guarded), the form `--redis-addr` takes. */
  get address(): string {
    return `${this.guard ? "rediss://" : ""}127.0.0.1:${this.port}`;
  }

  /** A client of the server's own, with its password and CA when guarded. */
  client(options: RedisOptions = {}): Redis {
    const guard = this.guard;
    return new Redis(this.port, "127.0.0.1", {
      ...(guard
        ? {
            password: guard.password,
            tls: {
              ca: guard.tls.ca,
              ...(guard.tls.clientCertificates ? { cert: guard.tls.cert, key: guard.tls.key } : {}),
            },
          }
        : {}),
      ...options,
    });
  }

  async stop(): Promise<void> {
    await this.process.stop();
    removeOwnedTempDir(this.dir);
  }
}

/** redis-server's flags for a guarded server: TLS only on `port`, and a password. */
function guardArgs(dir: string, port: number, guard: RedisGuard): string[] {
  const file = (name: string, text: string) => {
    writeFileSync(join(dir, name), text, { mode: 0o600 });
    return join(dir, name);
  };
  return [
    "--port",
    "0",
    "--tls-port",
    String(port),
    "--tls-cert-file",
    file("server.crt", guard.tls.cert),
    "--tls-key-file",
    file("server.key", guard.tls.key),
    "--tls-ca-cert-file",
    file("ca.crt", guard.tls.ca),
    "--tls-auth-clients",
    guard.tls.clientCertificates ? "yes" : "no",
    "--requirepass",
    guard.password,
  ];
}
