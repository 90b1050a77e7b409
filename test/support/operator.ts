import { join } from "node:path";
import type { KubeConfig } from "@kubernetes/client-node";
import { setupOperator, type Operator, type OperatorSettings } from "../../controllers/setup.ts";
import { Manager } from "../../internal/operator/manager.ts";
import type { Logger } from "../../internal/telemetry/logger.ts";
import { kustomizeBinary, repoRoot, typeScript } from "./binaries.ts";
import { keepLines } from "./keeplogs.ts";
import { freePort } from "./ports.ts";
import { ManagedProcess } from "./process.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "./reaper.ts";

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
  metricsPort: number;
  probePort: number;
  logFile: string;
}

/**
 * The operator as its own process, `cmd/operator.ts` with `args`, serving metrics and
 * probes on free loopback ports, for tests of what only a whole process shows: flags, probes,
 * signals, and the identity it runs as. `entry` runs a built JavaScript file instead, such as
 * `dist/operator.mjs`, the bundle the image runs (`make build`), for what the benchmark measures.
 */
export async function startOperatorProcess(
  kubeconfigPath: string,
  logDir: string,
  args: string[],
  env: NodeJS.ProcessEnv = {},
  entry?: string,
): Promise<OperatorProcess> {
  const [metricsPort, probePort] = [await freePort(), await freePort()];
  const logFile = join(logDir, "operator.log");
  const started = ManagedProcess.start({
    name: "gitops-reverser",
    command: process.execPath,
    args: [
      ...(entry ? [entry] : [...typeScript, join(repoRoot, "cmd/operator.ts")]),
      // Configured-author unless the test asks for attribution (a later flag wins).
      "--author-attribution=false",
      ...args,
      `--metrics-bind-address=127.0.0.1:${metricsPort}`,
      `--health-probe-bind-address=127.0.0.1:${probePort}`,
    ],
    env: { ...process.env, ...env, KUBECONFIG: kubeconfigPath },
    cwd: repoRoot,
    logFile,
  });
  return { process: started, metricsPort, probePort, logFile };
}
