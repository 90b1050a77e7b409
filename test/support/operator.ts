import type { KubeConfig } from "@kubernetes/client-node";
import { setupOperator, type Operator, type OperatorSettings } from "../../controllers/setup.ts";
import { Manager } from "../../internal/operator/manager.ts";

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
): RunningOperator & { errors: string[] } {
  const errors: string[] = [];
  const logger = {
    info: () => undefined,
    error: (message: string, meta?: object) => errors.push(`${message} ${JSON.stringify(meta ?? {})}`),
  };
  const manager = new Manager(kubeConfig, { logger });
  const operator = setupOperator(manager, {
    inClusterKubeProviders: [],
    allowKubeconfigExec: false,
    allowKubeconfigInsecureTls: false,
    catalogRefreshMs: 1_000,
    ...settings,
  });
  const running = manager.start();
  return {
    ...operator,
    manager,
    errors,
    async stop() {
      await manager.stop();
      await running;
    },
  };
}
