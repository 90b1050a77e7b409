// The flags of the metrics and probe servers, shared by the operator and the Kargo observer, as
// controller-runtime's secure metrics serving names them (a Go --flag=true|false included).
import { type Command, InvalidArgumentError } from "commander";

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
