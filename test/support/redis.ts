import { join } from "node:path";
import { Redis, type RedisOptions } from "ioredis";
import { freePort, startOnChosenPorts } from "./ports.ts";
import { ManagedProcess } from "./process.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "./reaper.ts";
import { eventually } from "./wait.ts";

/** Debian's redis-server on a free loopback port, with persistence off. */
export class RedisServer {
  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly process: ManagedProcess,
  ) {}

  /**
   * Starts on `port` when given: a restart of one that was stopped, where its clients reconnect.
   * Otherwise on a port chosen for it, chosen again if another process took it first.
   */
  static start(port?: number): Promise<RedisServer> {
    if (port !== undefined) return RedisServer.startOn(port);
    return startOnChosenPorts(async () => RedisServer.startOn(await freePort()));
  }

  private static async startOn(port: number): Promise<RedisServer> {
    const dir = makeOwnedTempDir("redis");
    const proc = ManagedProcess.start({
      name: "redis-server",
      command: "redis-server",
      args: [
        "--bind",
        "127.0.0.1",
        "--port",
        String(port),
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
    const server = new RedisServer(dir, port, proc);
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

  /** `127.0.0.1:<port>`, the form `--redis-addr` takes. */
  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  client(options: RedisOptions = {}): Redis {
    return new Redis(this.port, "127.0.0.1", options);
  }

  async stop(): Promise<void> {
    await this.process.stop();
    removeOwnedTempDir(this.dir);
  }
}
