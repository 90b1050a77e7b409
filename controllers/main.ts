// The operator's entry point: flags, then telemetry, then the manager and what it runs.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Server } from "node:http";
import { hostname } from "node:os";
import { KubeConfig } from "@kubernetes/client-node";
import { Manager } from "../internal/operator/manager.ts";
import { createLogger } from "../internal/telemetry/logger.ts";
import { registerInstruments } from "../internal/telemetry/instruments.ts";
import { createRegistry, leaderGauge } from "../internal/telemetry/metrics.ts";
import { parseBindAddress, serveMetrics, serveProbes } from "../internal/telemetry/servers.ts";
import { parseFlags } from "./flags.ts";
import { setupOperator } from "./setup.ts";
import { attributionSettings } from "./attribution.ts";

const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/** The pod's namespace when in a cluster, else the kubeconfig context's, else default. */
function ownNamespace(kubeConfig: KubeConfig): string {
  if (process.env.POD_NAMESPACE) return process.env.POD_NAMESPACE;
  try {
    return readFileSync(serviceAccountNamespaceFile, "utf8").trim();
  } catch {
    return kubeConfig.getContextObject(kubeConfig.getCurrentContext())?.namespace ?? "default";
  }
}

const options = parseFlags(process.argv.slice(2));
const logger = createLogger(options.logLevel, options.logFormat);
const kubeConfig = new KubeConfig();
kubeConfig.loadFromDefault();

const identity = `${hostname()}-${randomBytes(4).toString("hex")}`;
const manager = new Manager(kubeConfig, {
  logger,
  leaderElection: options.leaderElect
    ? {
        namespace: options.leaderElectionNamespace ?? ownNamespace(kubeConfig),
        name: "gitops-reverser-leader",
        identity,
      }
    : undefined,
});

const operator = setupOperator(manager, { ...options, attribution: attributionSettings(options) });

const registry = createRegistry();
registerInstruments(registry);
leaderGauge(registry, () => manager.isLeader);
const servers: Server[] = [];
const metricsAddress = parseBindAddress(options.metricsBindAddress);
if (metricsAddress) servers.push(await serveMetrics(registry, metricsAddress));
const probeAddress = parseBindAddress(options.healthProbeBindAddress);
if (probeAddress) {
  servers.push(
    await serveProbes(
      {
        informers: () => (manager.ready ? undefined : "informers have not synced"),
        ...(operator.redis ? { redis: operator.redis.readiness } : {}),
      },
      probeAddress,
    ),
  );
}

for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.once(signal, () => {
    logger.info("stopping", { signal });
    manager.stop().catch((err: unknown) => logger.error("stop failed", { error: String(err) }));
  });
}

logger.info("starting", {
  identity,
  leaderElect: options.leaderElect,
  server: kubeConfig.getCurrentCluster()?.server,
});
let exitCode = 0;
try {
  await manager.start();
  logger.info("stopped");
} catch (err) {
  logger.error("stopped on an error", { error: err instanceof Error ? err.message : String(err) });
  exitCode = 1;
}
await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
logger.end();
process.exitCode = exitCode;
