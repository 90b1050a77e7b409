import { join } from "node:path";
import { testenvBinaries } from "./binaries.ts";
import { freePort } from "./ports.ts";
import { ManagedProcess } from "./process.ts";
import { eventually } from "./wait.ts";

/** A single-member etcd on loopback, without fsync: test data never needs to survive a crash. */
export class Etcd {
  private constructor(
    readonly clientUrl: string,
    private readonly process: ManagedProcess,
  ) {}

  static async start(dir: string): Promise<Etcd> {
    const [clientPort, peerPort] = [await freePort(), await freePort()];
    const clientUrl = `http://127.0.0.1:${clientPort}`;
    const peerUrl = `http://127.0.0.1:${peerPort}`;
    const proc = ManagedProcess.start({
      name: "etcd",
      command: testenvBinaries().etcd,
      args: [
        "--name=testenv",
        `--data-dir=${join(dir, "etcd-data")}`,
        `--listen-client-urls=${clientUrl}`,
        `--advertise-client-urls=${clientUrl}`,
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=testenv=${peerUrl}`,
        "--unsafe-no-fsync",
        "--log-level=warn",
      ],
      logFile: join(dir, "etcd.log"),
    });
    const etcd = new Etcd(clientUrl, proc);
    try {
      await eventually(
        async () => {
          proc.assertRunning();
          const response = await fetch(`${clientUrl}/health`);
          return response.ok && ((await response.json()) as { health?: string }).health === "true";
        },
        { timeoutMs: 30_000, description: "etcd to report healthy" },
      );
    } catch (err) {
      await etcd.stop();
      throw err;
    }
    return etcd;
  }

  get pid(): number {
    return this.process.pid;
  }

  /**
   * Compacts etcd's history up to its current revision, and returns that revision: a watch
   * etcd serves from an older revision is answered 410 Gone from then on. It goes through
   * etcd's JSON gateway on the client URL, so no etcdctl is needed.
   */
  async compact(): Promise<number> {
    // Any read answers with the store's current revision in its header.
    const { header } = await this.gateway<{ header: { revision: string } }>("kv/range", {
      key: Buffer.from("/").toString("base64"),
    });
    const revision = Number(header.revision);
    await this.gateway("kv/compaction", { revision, physical: true });
    return revision;
  }

  private async gateway<T>(path: string, body: unknown): Promise<T> {
    const response = await fetch(`${this.clientUrl}/v3/${path}`, {
      method: "POST",
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`etcd ${path} answered ${response.status}: ${await response.text()}`);
    return (await response.json()) as T;
  }

  async stop(): Promise<void> {
    await this.process.stop();
  }
}
