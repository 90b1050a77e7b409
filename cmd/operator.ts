// The operator's entry point: flags, then telemetry, then the manager and what it runs.
import { processManager, runUntilStopped, serveTelemetry } from "../internal/operator/entrypoint.ts";
import { createLogger } from "../internal/telemetry/logger.ts";
import { registerInstruments } from "../internal/telemetry/instruments.ts";
import { createRegistry } from "../internal/telemetry/metrics.ts";
import { attributionSettings, checkReplicas, parseFlags, redisAccess } from "./flags.ts";
import { setupOperator } from "../controllers/setup.ts";
import { writtenKinds } from "../generated/v1alpha3/written.ts";
import { untilCrdsCurrent } from "../internal/operator/crdcheck.ts";

const options = parseFlags(process.argv.slice(2));
checkReplicas(options);
const logger = createLogger(options.logLevel, options.logFormat);
// More than one replica: each holds its share of the repository branches.
const { manager, identity, kubeConfig } = processManager(
  options,
  "gitops-reverser-leader",
  logger,
  options.replicaCount > 1 ? "gitops-reverser" : undefined,
);
const operator = setupOperator(manager, {
  ...options,
  identity,
  attribution: attributionSettings(options),
  redisAccess: redisAccess(options),
});

const registry = createRegistry();
registerInstruments(registry);
// Nothing is reconciled on CRDs older than this version: /readyz says which and what to apply.
let crdProblem: string | undefined;
const servers = await serveTelemetry(manager, registry, options, {
  crds: () => crdProblem,
  ...(operator.redis ? { redis: operator.redis.readiness } : {}),
});

logger.info("starting", {
  identity,
  leaderElect: options.leaderElect,
  server: kubeConfig.getCurrentCluster()?.server,
});
await runUntilStopped(manager, servers, logger, (signal) =>
  untilCrdsCurrent(kubeConfig, writtenKinds, logger, signal, (problem) => (crdProblem = problem)),
);
