import { spawn, type ChildProcess } from "node:child_process";
import { openSync, closeSync, readFileSync } from "node:fs";
import { trackProcess, untrackProcess } from "./reaper.ts";
import { GiveUp } from "./wait.ts";

export interface ManagedProcessOptions {
  /** A short name for errors, such as "etcd". */
  name: string;
  command: string;
  args: string[];
  /** Where stdout and stderr go; the tail is quoted when the process fails. */
  logFile: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * A child process the harness owns. It is started under `setpriv --pdeathsig KILL`, so the
 * kernel kills it if the test process dies without cleaning up, even by SIGKILL.
 */
export class ManagedProcess {
  readonly exited: Promise<ExitStatus>;
  private exitStatus: ExitStatus | undefined;

  private constructor(
    readonly options: ManagedProcessOptions,
    private readonly child: ChildProcess,
  ) {
    this.exited = new Promise((resolve) => {
      child.once("exit", (code, signal) => {
        this.exitStatus = { code, signal };
        if (child.pid !== undefined) untrackProcess(child.pid);
        resolve(this.exitStatus);
      });
    });
  }

  static start(options: ManagedProcessOptions): ManagedProcess {
    const log = openSync(options.logFile, "a");
    try {
      const child = spawn("setpriv", ["--pdeathsig", "KILL", "--", options.command, ...options.args], {
        cwd: options.cwd,
        env: options.env ?? process.env,
        stdio: ["ignore", log, log],
      });
      if (child.pid === undefined) {
        throw new Error(`${options.name}: could not start ${options.command}`);
      }
      trackProcess(child.pid);
      return new ManagedProcess(options, child);
    } finally {
      closeSync(log);
    }
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get running(): boolean {
    return this.exitStatus === undefined;
  }

  /** The last lines of the process's log, for error messages. */
  logTail(lines = 30): string {
    try {
      return readFileSync(this.options.logFile, "utf8").split("\n").slice(-lines).join("\n");
    } catch {
      return "(no log)";
    }
  }

  /** Throws with the log tail if the process has already exited. Used while waiting for readiness. */
  assertRunning(): void {
    if (this.exitStatus) {
      const { code, signal } = this.exitStatus;
      throw new GiveUp(
        `${this.options.name} exited (code ${code}, signal ${signal}); last log lines:\n${this.logTail()}`,
      );
    }
  }

  /** SIGKILL at once, as a crash or an OOM kill ends a process: nothing of it runs after. */
  async kill(): Promise<void> {
    if (!this.running) return;
    this.child.kill("SIGKILL");
    await this.exited;
  }

  /** SIGTERM, then SIGKILL after the grace period. Resolves once the process is gone. */
  async stop(graceMs = 10_000): Promise<void> {
    if (!this.running) return;
    this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), graceMs);
    try {
      await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }
}
