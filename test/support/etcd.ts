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

  async stop(): Promise<void> {
    await this.process.stop();
  }
}
