// The flags of the metrics and probe servers and of the leader Lease's timings, shared by the
// operator and the Kargo observer, as controller-runtime names them (a Go --flag=true|false
// included).
import { type Command, InvalidArgumentError, Option } from "commander";
import type { ProcessFlags } from "../internal/operator/entrypoint.ts";
import { defaultLeaseTimings } from "../internal/operator/leaderelection.ts";
import { parseDuration } from "../internal/types/units.ts";

/** A Go-style boolean flag: bare, =true or =false. */
export function parseBool(value: string | undefined): boolean {
  if (value === undefined || value === "true") return true;
  if (value === "false") return false;
  throw new InvalidArgumentError(`expected true or false, got "${value}"`);
}

/**
 * The metrics and probe flags, as controller-runtime's secure metrics serving names them: the
 * operator's and the Kargo observer's alike.
 */
export function withTelemetryFlags(command: Command): Command {
  return command
    .option("--metrics-bind-address <address>", "where /metrics is served; 0 disables it", ":8443")
    .option(
      "--metrics-secure [bool]",
      "serve /metrics over HTTPS to scrapers the API server authenticates (TokenReview) and authorizes (SubjectAccessReview on /metrics); false serves plain HTTP to anyone",
      parseBool,
      true,
    )
    .option(
      "--metrics-cert-path <dir>",
      "the folder of the metrics serving certificate, served again when it changes; empty: a self-signed one made at start",
      "",
    )
    .option("--metrics-cert-name <file>", "the certificate's file in --metrics-cert-path", "tls.crt")
    .option("--metrics-cert-key <file>", "the key's file in --metrics-cert-path", "tls.key")
    .option(
      "--health-probe-bind-address <address>",
      "where /healthz and /readyz are served; 0 disables them",
      ":8081",
    );
}

/** The Lease timings, in milliseconds, as the flags below give them. */
export type LeaseTimingFlags = Pick<
  ProcessFlags,
  "leaderElectionLeaseDuration" | "leaderElectionRenewDeadline" | "leaderElectionRetryPeriod"
>;

/**
 * How long a Lease holds, how long its holder keeps trying to renew before it stops, and how often
 * it tries, as controller-runtime's LeaseDuration, RenewDeadline and RetryPeriod (15s, 10s, 2s by
 * default). A shorter Lease fails over sooner; it also loses its holder sooner to an API server
 * that answers slowly. The operator's branch Leases use the same three.
 */
export function withLeaseTimingFlags(command: Command): Command {
  const flag = (name: string, description: string, defaultMs: number) =>
    new Option(`--${name} <duration>`, description)
      .argParser((value: string) => {
        try {
          return parseDuration(value);
        } catch (err) {
          throw new InvalidArgumentError(`--${name}: ${(err as Error).message}`);
        }
      })
      .default(defaultMs, `${defaultMs / 1000}s`);
  return command
    .addOption(
      flag(
        "leader-election-lease-duration",
        "how long a Lease holds after its last renewal: another replica takes it over this long after its holder stopped",
        defaultLeaseTimings.leaseDurationMs,
      ),
    )
    .addOption(
      flag(
        "leader-election-renew-deadline",
        "how long a holder keeps failing to renew before it stops all it does under the Lease; shorter than the lease duration",
        defaultLeaseTimings.renewDeadlineMs,
      ),
    )
    .addOption(
      flag(
        "leader-election-retry-period",
        "how often a Lease is tried for and renewed; shorter than the renew deadline",
        defaultLeaseTimings.retryPeriodMs,
      ),
    );
}

/**
 * What is wrong with the Lease timings, or undefined: a holder must stop before its Lease can be
 * taken (renew deadline under lease duration, with room for one more try), and must try more than
 * once before it stops (retry period under renew deadline).
 */
export function leaseTimingProblem(flags: LeaseTimingFlags): string | undefined {
  const { leaderElectionLeaseDuration: lease, leaderElectionRenewDeadline: renew } = flags;
  const retry = flags.leaderElectionRetryPeriod;
  if (retry <= 0) return "--leader-election-retry-period must be above 0";
  if (renew <= retry)
    return `--leader-election-renew-deadline (${renew / 1000}s) must be longer than --leader-election-retry-period (${retry / 1000}s): a holder tries more than once before it stops`;
  if (lease <= renew)
    return `--leader-election-lease-duration (${lease / 1000}s) must be longer than --leader-election-renew-deadline (${renew / 1000}s): a holder stops before another replica may take its Lease`;
  return undefined;
}
