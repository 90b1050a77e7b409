import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import type { KubeConfig } from "@kubernetes/client-node";
import { setupOperator } from "../../controllers/setup.ts";
import type { Operator, OperatorSettings } from "../../controllers/settings.ts";
import { Manager } from "../../internal/operator/manager.ts";
import type { Logger } from "../../internal/telemetry/logger.ts";
import { kustomizeBinary, repoRoot, typeScript } from "./binaries.ts";
import { keepLines } from "./keeplogs.ts";
import { ManagedProcess } from "./process.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "./reaper.ts";
import { eventually } from "./wait.ts";

export interface RunningOperator extends Operator {
  manager: Manager;
  stop(): Promise<void>;
}

/**
 * The operator, wired as main.ts wires it, running in the test's process against `kubeConfig`
 * without leader election. Errors are collected in `errors` for assertions.
 */
export function startOperator(
  kubeConfig: KubeConfig,
  settings: Partial<OperatorSettings> = {},
): RunningOperator & { errors: string[]; logs: string[] } {
  const errors: string[] = [];
  // Every line, for a test that checks what the operator never logs.
  const logs: string[] = [];
  const line = (message: string, meta?: object) => `${message} ${JSON.stringify(meta ?? {})}`;
  // With KEEP_TEST_LOGS, every line with its time too, written out when the operator stops.
  const timed: string[] | undefined = process.env.KEEP_TEST_LOGS ? [] : undefined;
  const keep = (message: string, meta?: object) => {
    logs.push(line(message, meta));
    timed?.push(`${new Date().toISOString()} ${line(message, meta)}`);
  };
  const logger: Logger = {
    debug: keep,
    info: keep,
    warn: keep,
    error: (message: string, meta?: object) => {
      keep(message, meta);
      errors.push(line(message, meta));
    },
  };
  const startedAt = new Date().toISOString().replace(/[:.]/g, "-");
  const manager = new Manager(kubeConfig, { logger });
  const operator = setupOperator(manager, {
    inClusterKubeProviders: [],
    allowKubeconfigExec: false,
    allowKubeconfigInsecureTls: false,
    catalogRefreshMs: 1_000,
    kustomizePath: kustomizeBinary(),
    ...settings,
  });
  const running = manager.start();
  return {
    ...operator,
    manager,
    errors,
    logs,
    async stop() {
      await manager.stop();
      await running;
      if (timed) keepLines(`operator-${process.pid}`, `${startedAt}.log`, timed);
    },
  };
}

/**
 * Another operator in the test's process, as `startOperator` runs it, with no push cooldown and a
 * clone folder of its own (named after `folder`), removed once it stops: a restart's, or one that
 * reaches the API server through a proxy.
 */
export function startOwnedOperator(
  kubeConfig: KubeConfig,
  folder: string,
  settings: Partial<OperatorSettings> = {},
): ReturnType<typeof startOperator> {
  const workerRoot = makeOwnedTempDir(folder);
  const operator = startOperator(kubeConfig, { workerRoot, pushCooldownMs: 0, ...settings });
  return { ...operator, stop: () => operator.stop().finally(() => removeOwnedTempDir(workerRoot)) };
}

export interface OperatorProcess {
  process: ManagedProcess;
  logFile: string;
  /**
   * The port the process serves `server` on ("metrics", "probes", "push notices", "audit
   * events"), read back from its "serving" line: the process binds port 0, so no port is chosen
   * here that a process beside it could take first. The line is written at info level.
   */
  port: (server: string) => Promise<number>;
}

/**
 * The operator as its own process, `cmd/operator.ts` with `args`, serving metrics and probes on
 * ports the kernel picks on loopback (`port` reads them back), for tests of what only a whole
 * process shows: flags, probes, signals, and the identity it runs as. `entry` runs a built
 * JavaScript file instead, such as `dist/operator.mjs`, the bundle the image runs (`make
 * build`), for what the benchmark measures.
 */
export function startOperatorProcess(
  kubeconfigPath: string,
  logDir: string,
  args: string[],
  env: NodeJS.ProcessEnv = {},
  entry?: string,
): OperatorProcess {
  const logFile = join(logDir, "operator.log");
  // The log is appended to: a process started before on the same folder said where it served.
  const from = existsSync(logFile) ? statSync(logFile).size : 0;
  const started = ManagedProcess.start({
    name: "gitops-reverser",
    command: process.execPath,
    args: [
      ...(entry ? [entry] : [...typeScript, join(repoRoot, "cmd/operator.ts")]),
      // Configured-author unless the test asks for attribution (a later flag wins).
      "--author-attribution=false",
      "--metrics-bind-address=127.0.0.1:0",
      "--health-probe-bind-address=127.0.0.1:0",
      ...args,
    ],
    env: { ...process.env, ...env, KUBECONFIG: kubeconfigPath },
    cwd: repoRoot,
    logFile,
  });
  return { process: started, logFile, port: (server) => servedPort(started, logFile, server, from) };
}

/**
 * The port a process of ours (the operator, the Kargo observer) serves `server` on, read back
 * from the "serving" line it writes at info level once bound, in its log from byte `from` on;
 * throws if it exits first.
 */
export function servedPort(
  started: ManagedProcess,
  logFile: string,
  server: string,
  from = 0,
): Promise<number> {
  return eventually(
    () => {
      const bound = servingPort(logFile, server, from);
      if (bound === undefined) started.assertRunning();
      return bound;
    },
    { timeoutMs: 60_000, description: () => `the process to serve ${server}:\n${started.logTail()}` },
  );
}

/** The port of `server` in the process's "serving" line, once written. */
function servingPort(logFile: string, server: string, from: number): number | undefined {
  let text: string;
  try {
    text = readFileSync(logFile).subarray(from).toString("utf8");
  } catch {
    return undefined;
  }
  for (const line of text.split("\n")) {
    if (!line.startsWith("{") || !line.includes('"serving"')) continue;
    const entry = JSON.parse(line) as { message?: string; server?: string; address?: string };
    if (entry.message === "serving" && entry.server === server && entry.address)
      return Number(entry.address.slice(entry.address.lastIndexOf(":") + 1));
  }
  return undefined;
}
