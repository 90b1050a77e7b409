// What a process built on this runtime does around its controllers: the manager, with the
// leader election its flags ask for, the metrics server (HTTPS behind the API server's reviews
// unless --metrics-secure=false) and the probe server, and a run that stops on
// SIGTERM or SIGINT and exits non-zero when the manager stopped on an error (a lost Lease).
// The operator and the Kargo observer are two such processes.
import type { Server } from "node:http";
import { hostname } from "node:os";
import { KubeConfig } from "@kubernetes/client-node";
import type { Registry } from "prom-client";
import { ownNamespace } from "../kube/namespace.ts";
import { leaderGauge } from "../telemetry/metrics.ts";
import {
  parseBindAddress,
  serveMetrics,
  serveProbes,
  type Check,
  type MetricsServing,
} from "../telemetry/servers.ts";
import { MetricsAuthorizer } from "../telemetry/metricsauth.ts";
import { readCertificate, selfSignedCertificate } from "../telemetry/servingcert.ts";
import type { Logger } from "../telemetry/logger.ts";
import { Manager } from "./manager.ts";
import { newProcessIdentity } from "./identity.ts";
import { errorText } from "../telemetry/errortext.ts";

export interface ProcessFlags {
  leaderElect: boolean;
  leaderElectionNamespace?: string;
  /** The Lease's timings, in milliseconds (controller-runtime's LeaseDuration, RenewDeadline, RetryPeriod). */
  leaderElectionLeaseDuration: number;
  leaderElectionRenewDeadline: number;
  leaderElectionRetryPeriod: number;
  metricsBindAddress: string;
  /** HTTPS, behind TokenReview and SubjectAccessReview; false: plain HTTP, open to any client. */
  metricsSecure: boolean;
  /** The folder of the metrics serving certificate; empty: a self-signed one made at start. */
  metricsCertPath: string;
  metricsCertName: string;
  metricsCertKey: string;
  healthProbeBindAddress: string;
}

/**
 * The manager of a process, on the default kubeconfig, leader-elected on `leaseName` when asked;
 * with `sharePrefix` (and leader election) every replica is active on its share of the work.
 */
export function processManager(flags: ProcessFlags, leaseName: string, logger: Logger, sharePrefix?: string) {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromDefault();
  const identity = newProcessIdentity();
  const manager = new Manager(kubeConfig, {
    logger,
    leaderElection: flags.leaderElect
      ? {
          namespace: flags.leaderElectionNamespace ?? ownNamespace(kubeConfig),
          name: leaseName,
          identity,
          leaseDurationMs: flags.leaderElectionLeaseDuration,
          renewDeadlineMs: flags.leaderElectionRenewDeadline,
          retryPeriodMs: flags.leaderElectionRetryPeriod,
        }
      : undefined,
    ...(sharePrefix ? { sharePrefix } : {}),
  });
  return { manager, identity, kubeConfig };
}

/** Serves /metrics and the probes (ready once every informer synced, and every check passes). */
export async function serveTelemetry(
  manager: Manager,
  registry: Registry,
  flags: ProcessFlags,
  checks: Record<string, Check> = {},
): Promise<Server[]> {
  leaderGauge(registry, () => manager.isLeader);
  const servers: Server[] = [];
  const metricsAddress = parseBindAddress(flags.metricsBindAddress);
  if (metricsAddress)
    servers.push(
      await serveMetrics(registry, metricsAddress, await metricsServing(manager, flags), manager.logger),
    );
  const probeAddress = parseBindAddress(flags.healthProbeBindAddress);
  if (probeAddress) {
    const informers = () => (manager.ready ? undefined : "informers have not synced");
    servers.push(await serveProbes({ informers, ...checks }, probeAddress, manager.logger));
  }
  return servers;
}

/** How the flags say /metrics is served; a --metrics-cert-path whose pair cannot be read stops the start. */
async function metricsServing(manager: Manager, flags: ProcessFlags): Promise<MetricsServing> {
  if (!flags.metricsSecure) return { secure: false };
  const authorizer = new MetricsAuthorizer(manager.kubeConfig);
  const check = (authorization: string | undefined) => authorizer.check(authorization);
  if (!flags.metricsCertPath) {
    const certificate = selfSignedCertificate(
      "gitops-reverser-metrics",
      ["localhost", hostname()],
      ["127.0.0.1"],
    );
    return { secure: true, certificate, check };
  }
  const watch = {
    dir: flags.metricsCertPath,
    certName: flags.metricsCertName,
    keyName: flags.metricsCertKey,
  };
  const certificate = await readCertificate(watch.dir, watch.certName, watch.keyName);
  if (certificate instanceof Error)
    throw new Error(`--metrics-cert-path=${watch.dir}: ${certificate.message}`);
  return { secure: true, certificate, watch, check };
}

/**
 * Runs the manager until a signal stops it; the exit code says whether it stopped on an error.
 * `before` runs first, and a signal ends it too (the operator waits there for current CRDs).
 */
export async function runUntilStopped(
  manager: Manager,
  servers: Server[],
  logger: Logger & { end(): void },
  before?: (signal: AbortSignal) => Promise<void>,
): Promise<void> {
  const stopping = new AbortController();
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.once(signal, () => {
      logger.info("stopping", { signal });
      stopping.abort();
      manager.stop().catch((err: unknown) => logger.error("stop failed", { error: errorText(err) }));
    });
  }
  let exitCode = 0;
  try {
    await before?.(stopping.signal);
    if (!stopping.signal.aborted) await manager.start();
    logger.info("stopped");
  } catch (err) {
    logger.error("stopped on an error", { error: errorText(err) });
    exitCode = 1;
  }
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  logger.end();
  process.exitCode = exitCode;
}
