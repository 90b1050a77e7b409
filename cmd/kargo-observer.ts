// The Kargo observer's entry point: its own process, flags, probes, metrics and Lease, on the
// operator's runtime. It shares nothing with the operator at run time.
import { Command, Option } from "commander";
import {
  processManager,
  runUntilStopped,
  serveTelemetry,
  type ProcessFlags,
} from "../internal/operator/entrypoint.ts";
import { leaseTimingProblem, withLeaseTimingFlags, withTelemetryFlags } from "./telemetryflags.ts";
import { createLogger, type LogFormat, type LogLevel } from "../internal/telemetry/logger.ts";
import { createRegistry } from "../internal/telemetry/metrics.ts";
import type { ObserveMode } from "../internal/kargo/views.ts";
import { freightMissing, setupKargoObserver } from "../controllers/kargoobserver.ts";

interface ObserverOptions extends ProcessFlags {
  observeMode: ObserveMode;
  logLevel: LogLevel;
  logFormat: LogFormat;
}

const command = withLeaseTimingFlags(withTelemetryFlags(new Command("kargo-argocd-observer")))
  .description("Turns an image bumped by hand in Git and synced by Argo CD into a Kargo Promotion.")
  .addOption(
    new Option(
      "--observe-mode <mode>",
      "all: every authorized Application but the ignored; opt-in: only those annotated",
    )
      .choices(["all", "opt-in"])
      .default("all"),
  )
  .option(
    "--leader-elect [bool]",
    "take the Lease kargo-argocd-observer-leader before reconciling",
    (v) => v !== "false",
    false,
  )
  .option("--leader-election-namespace <namespace>", "where the Lease lives; the pod's namespace by default")
  .addOption(new Option("--log-level <level>").choices(["debug", "info", "warn", "error"]).default("info"))
  .addOption(new Option("--log-format <format>").choices(["json", "text"]).default("json"))
  .parse(process.argv);
const options = command.opts<ObserverOptions>();
const leaseProblem = leaseTimingProblem(options);
if (leaseProblem) command.error(`error: ${leaseProblem}`);

const logger = createLogger(options.logLevel, options.logFormat);
const { manager, identity } = processManager(options, "kargo-argocd-observer-leader", logger);
setupKargoObserver(manager, options.observeMode, identity);

const registry = createRegistry();
registry.registerMetric(freightMissing);
const servers = await serveTelemetry(manager, registry, options);
logger.info("starting", { identity, leaderElect: options.leaderElect, observeMode: options.observeMode });
await runUntilStopped(manager, servers, logger);
