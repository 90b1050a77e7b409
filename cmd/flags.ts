// The operator's command line. Flag names follow the seeds, so a manifest written for the Go
// implementation starts this one unchanged, Go's --flag=true|false booleans included. What the
// flags cannot start with (attribution's, below) is refused at startup, saying which flag to change.
import { Command, InvalidArgumentError, Option } from "commander";
import { parseDuration, parseQuantity } from "../internal/types/units.ts";
import type { LogFormat, LogLevel } from "../internal/telemetry/logger.ts";
import { defaultWorkerRoot } from "../internal/git/index.ts";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { AttributionSettings } from "../internal/attribution/attribution.ts";
import { parseRedisAddress, type RedisAccess } from "../internal/redis/connection.ts";
import { parseBindAddress } from "../internal/telemetry/servers.ts";
import {
  leaseTimingProblem,
  parseBool,
  withLeaseTimingFlags,
  withTelemetryFlags,
  type LeaseTimingFlags,
} from "./telemetryflags.ts";

export interface OperatorOptions extends LeaseTimingFlags {
  /** KubeProviders, as namespace/name, allowed to use the operator's own identity. */
  inClusterKubeProviders: string[];
  /** Whether a KubeProvider's kubeconfig may use exec credential plugins. */
  allowKubeconfigExec: boolean;
  /** Whether a KubeProvider's kubeconfig may skip TLS verification. */
  allowKubeconfigInsecureTls: boolean;
  redisAddr: string;
  /** Redis's ACL user and its password (the default user's, alone); empty: none sent. */
  redisUsername: string;
  redisPassword: string;
  /** For rediss://: the CA that signed Redis's certificate, and a client certificate and key. */
  redisCaFile: string;
  redisCertFile: string;
  redisKeyFile: string;
  /** The key stream entries are signed with (the same on every replica); empty: unsigned. */
  redisHmacKey: string;
  authorAttribution: boolean;
  /** Milliseconds a live change waits for its audit fact. */
  authorAttributionGrace: number;
  authorAttributionTransport: "redis" | "memory";
  authorAttributionAuditRouteAnnotationKey: string | undefined;
  replicaCount: number;
  auditBindAddress: string;
  /** Where the push receiver listens; empty (the default) serves none. */
  receiverBindAddress: string;
  /** Whether a WebhookClaim may send plain http to a loopback host. */
  webhookClaimAllowLoopbackHttp: boolean;
  /** tls.crt, tls.key and the audit CA's ca.crt. */
  auditCertDir: string;
  auditInsecure: boolean;
  /** Bytes a branch may hold accepted and unpublished. */
  branchBufferMaxSize: number;
  /** Milliseconds between re-proofs of an idle branch. */
  gitRefreshInterval: number;
  /** Milliseconds a finished CommitRequest is kept before it is deleted. */
  commitRequestRetention: number;
  /** Milliseconds between reads of a held applier by its Ready FluxClaim or ArgoCDClaim. */
  applierClaimRecheckInterval: number;
  /** More resource types to treat as sensitive, as resource.group (core: resource). */
  additionalSensitiveResources: string[];
  /** Where the branch workers keep their clones, one directory per GitBranch uid. */
  workerRoot: string;
  /** The kustomize binary that renders a folder to judge it. */
  kustomizePath: string;
  metricsBindAddress: string;
  metricsSecure: boolean;
  metricsCertPath: string;
  metricsCertName: string;
  metricsCertKey: string;
  healthProbeBindAddress: string;
  leaderElect: boolean;
  leaderElectionNamespace: string | undefined;
  logLevel: LogLevel;
  logFormat: LogFormat;
}

function invalid(flag: string, parse: (value: string) => unknown) {
  return (value: string) => {
    try {
      return parse(value);
    } catch (err) {
      throw new InvalidArgumentError(`${flag}: ${(err as Error).message}`);
    }
  };
}

function commaList(check: (item: string) => void) {
  return (value: string): string[] => {
    const items = value
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
    for (const item of items) check(item);
    return items;
  };
}

const namespacedName = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?\/[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const resourceName = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * Every flag may also come from the environment, as GITOPS_REVERSER_ and the flag's name in
 * capitals (--redis-addr: GITOPS_REVERSER_REDIS_ADDR); a flag given on the command line wins.
 * OLM's Subscription, and many a platform's templating, can set a pod's environment but not
 * its arguments.
 */
export function envNameOf(flag: string): string {
  return `GITOPS_REVERSER_${flag.replace(/^--/, "").replaceAll("-", "_").toUpperCase()}`;
}

/** A command whose every option also reads its environment variable (commander wires it as an option is added). */
class EnvironmentCommand extends Command {
  override addOption(option: Option): this {
    return super.addOption(option.long ? option.env(envNameOf(option.long)) : option);
  }
}

export function flagParser(): Command {
  const command = withLeaseTimingFlags(withTelemetryFlags(new EnvironmentCommand("gitops-reverser")));
  command.description(
    "Watches a Kubernetes cluster and writes the desired state of the objects it follows to Git.",
  );
  for (const group of [
    withSourceFlags,
    withRedisFlags,
    withAttributionFlags,
    withServingFlags,
    withGitFlags,
    withProcessFlags,
  ])
    group(command);
  return command.allowExcessArguments(false);
}

/** What the operator may do with the source clusters' credentials. */
function withSourceFlags(command: Command): Command {
  return command
    .option(
      "--in-cluster-kube-providers <list>",
      "comma-separated namespace/name of the KubeProviders allowed to use the operator's own identity (spec.inCluster)",
      commaList((item) => {
        if (!namespacedName.test(item)) throw new InvalidArgumentError(`"${item}" is not namespace/name`);
      }),
      [],
    )
    .option(
      "--allow-kubeconfig-exec [bool]",
      "let KubeProvider kubeconfigs use exec credential plugins, which run commands in the operator's pod",
      parseBool,
      false,
    )
    .option(
      "--allow-kubeconfig-insecure-tls [bool]",
      "let KubeProvider kubeconfigs skip TLS verification of the source API server",
      parseBool,
      false,
    );
}

/** Redis: where it is, how the operator signs in, and the key that signs what is kept there. */
function withRedisFlags(command: Command): Command {
  return command
    .option(
      "--redis-addr <host:port>",
      "Redis (or Valkey) for watch resume cursors and the redis attribution transport; rediss://host:port for TLS; empty runs without it",
      "",
    )
    .option("--redis-username <user>", "Redis's ACL user; empty: the default user", "")
    .option(
      "--redis-password <password>",
      "Redis's password (requirepass, or the ACL user's); give it in GITOPS_REVERSER_REDIS_PASSWORD, not on the command line",
      "",
    )
    .option(
      "--redis-ca-file <path>",
      "with rediss://: the CA that signed Redis's certificate; empty: the system's",
      "",
    )
    .option(
      "--redis-cert-file <path>",
      "with rediss://: a client certificate, for a Redis that asks for one",
      "",
    )
    .option("--redis-key-file <path>", "with rediss://: the client certificate's key", "")
    .option(
      "--redis-hmac-key <key>",
      "sign every durable-queue entry and audit fact kept in Redis with this key (the same on every replica) and drop any read back without it; give it in GITOPS_REVERSER_REDIS_HMAC_KEY",
      "",
    );
}

/** Author attribution: whether it is on, how long a change waits for its fact, and how facts travel. */
function withAttributionFlags(command: Command): Command {
  return command
    .option(
      "--author-attribution [bool]",
      "name the actor of each change as the commit author, from audit events (on by default, as the seeds say: the install manifests and the chart pass false for a first install)",
      parseBool,
      true,
    )
    .addOption(
      new Option("--author-attribution-grace <duration>", "how long a live change waits for its audit fact")
        .argParser(invalid("--author-attribution-grace", parseDuration))
        .default(parseDuration("3s"), "3s"),
    )
    .option(
      "--author-attribution-transport <transport>",
      "how audit facts travel: redis (Redis Streams, needs --redis-addr) or memory (in process, one replica)",
      invalid("--author-attribution-transport", (v) => oneOf(v, ["redis", "memory"])),
      "redis",
    )
    .option(
      "--author-attribution-audit-route-annotation-key <key>",
      "serve the bare /audit-webhook, where each event names its audit route in this annotation",
    );
}

/** How many replicas run, and what the process serves: the audit ingress and the push receiver. */
function withServingFlags(command: Command): Command {
  return command
    .option(
      "--replica-count <n>",
      "how many replicas of the operator run: more than one needs --leader-elect and --redis-addr, and the in-process fact transport needs exactly one",
      invalid("--replica-count", (v) => {
        const n = Number(v);
        if (!Number.isInteger(n) || n < 1) throw new Error(`"${v}" is not a positive integer`);
        return n;
      }),
      1,
    )
    .option("--audit-bind-address <address>", "where the audit ingress listens, with attribution on", ":9444")
    .option(
      "--receiver-bind-address <address>",
      "where the push receiver listens for Git hosts' push webhooks (/git-push/<path>) and webhook appliers' reports (/webhook-claim/<namespace>/<name>); empty serves none",
      "",
    )
    .option(
      "--webhook-claim-allow-loopback-http [bool]",
      "let a WebhookClaim POST over plain http to a loopback host (a test, a demo on one machine); every other URL must be https",
      parseBool,
      false,
    )
    .option(
      "--audit-cert-dir <dir>",
      "the audit ingress's serving tls.crt and tls.key, and the ca.crt client certificates must chain to",
      "/tmp/k8s-audit-server/serving-certs",
    )
    .option(
      "--audit-insecure [bool]",
      "serve the audit ingress over plain HTTP with no client certificate: for a test bench, never production",
      parseBool,
      false,
    );
}

/** The write side: a branch's buffer, its refresh, CommitRequest retention, the claims' recheck, what is written encrypted, where clones live, kustomize. */
function withGitFlags(command: Command): Command {
  return command
    .addOption(
      new Option("--branch-buffer-max-size <quantity>", "bytes one branch may hold accepted and unpublished")
        .argParser(invalid("--branch-buffer-max-size", parseQuantity))
        .default(parseQuantity("8Mi"), "8Mi"),
    )
    .addOption(
      new Option(
        "--git-refresh-interval <duration>",
        "how often an idle branch re-proves where its remote is",
      )
        .argParser(invalid("--git-refresh-interval", parseDuration))
        .default(parseDuration("10m"), "10m"),
    )
    .addOption(
      new Option(
        "--commit-request-retention <duration>",
        "how long a finished CommitRequest is kept (stamped configbutler.ai/delete-after) before it is deleted",
      )
        .argParser(invalid("--commit-request-retention", parseDuration))
        .default(parseDuration("1h"), "1h"),
    )
    .addOption(
      new Option(
        "--applier-claim-recheck-interval <duration>",
        "how often a Ready FluxClaim or ArgoCDClaim reads its Kustomization or Application again: how long a resume, or automated sync switched on, by hand goes unanswered",
      )
        .argParser(invalid("--applier-claim-recheck-interval", atLeastOneSecond))
        .default(parseDuration("1m"), "1m"),
    )
    .option(
      "--additional-sensitive-resources <list>",
      "comma-separated resource.group types written only encrypted, besides core Secrets",
      commaList((item) => {
        if (!resourceName.test(item))
          throw new InvalidArgumentError(`"${item}" is not resource or resource.group`);
      }),
      [],
    )
    .option(
      "--worker-root <dir>",
      "where the branch workers keep their clones; each process sweeps only the directories it owns",
      defaultWorkerRoot,
    )
    .option(
      "--kustomize-path <path>",
      "the kustomize binary that renders a kustomize folder to judge it against live (never to write it)",
      "kustomize",
    );
}

/** The process: leader election, and its logs. */
function withProcessFlags(command: Command): Command {
  return command
    .option(
      "--leader-elect [bool]",
      "elect one active process on a Lease before running the watch plane and the branch workers",
      parseBool,
      false,
    )
    .option("--leader-election-namespace <namespace>", "the Lease's namespace; defaults to the pod's own")
    .option(
      "--log-level <level>",
      "error, warn, info or debug",
      invalid("--log-level", (v) => oneOf(v, ["error", "warn", "info", "debug"])),
      "info",
    )
    .option(
      "--log-format <format>",
      "json or text",
      invalid("--log-format", (v) => oneOf(v, ["json", "text"])),
      "json",
    );
}

/** A recheck interval: under a second would have every claim read its applier without pause. */
function atLeastOneSecond(value: string): number {
  const ms = parseDuration(value);
  if (ms < 1_000) throw new Error(`"${value}" is under 1s`);
  return ms;
}

function oneOf(value: string, allowed: string[]): string {
  if (!allowed.includes(value)) throw new Error(`"${value}" is not one of ${allowed.join(", ")}`);
  return value;
}

/** Parses the arguments after the program name. Errors and --help exit through commander. */
export function parseFlags(argv: string[], command: Command = flagParser()): OperatorOptions {
  command.parse(argv, { from: "user" });
  const options = command.opts<OperatorOptions>();
  const problem = leaseTimingProblem(options);
  if (problem) command.error(`error: ${problem}`);
  return options;
}

/**
 * Refuses more than one replica where it cannot work: without --leader-elect every replica would
 * write every branch, and without Redis a standby that takes over would find no durable queue
 * to replay and no way to hear a push notice another replica received.
 */
export function checkReplicas(
  options: Pick<OperatorOptions, "replicaCount" | "leaderElect" | "redisAddr">,
): void {
  if (options.replicaCount === 1) return;
  if (!options.leaderElect)
    throw new Error(
      `--replica-count=${options.replicaCount} needs --leader-elect=true: the replicas share the branches out on Leases, and the leader handles what belongs to no branch`,
    );
  if (!options.redisAddr)
    throw new Error(
      `--replica-count=${options.replicaCount} needs --redis-addr: the durable write queue a replica taking a branch over replays and the push notices every replica hears live in Redis`,
    );
}

/** --author-attribution and its flags, as the settings the operator's wiring takes. */
/**
 * How the operator proves itself to Redis and Redis to it, as the flags say; the files are read
 * now, so a wrong path stops the start with its name.
 */
export function redisAccess(options: OperatorOptions): RedisAccess {
  const read = (flag: string, path: string) => {
    try {
      return readFileSync(path, "utf8");
    } catch (err) {
      throw new Error(`${flag}=${path}: ${(err as Error).message}`, { cause: err });
    }
  };
  const files = [
    ["ca", "--redis-ca-file", options.redisCaFile],
    ["cert", "--redis-cert-file", options.redisCertFile],
    ["key", "--redis-key-file", options.redisKeyFile],
  ] as const;
  const given = files.filter(([, , path]) => path !== "");
  if (given.length > 0 && !parseRedisAddress(options.redisAddr || "unset").tls)
    throw new Error(`${given[0]![1]} is for TLS: give --redis-addr as rediss://host:port`);
  if ((options.redisCertFile === "") !== (options.redisKeyFile === ""))
    throw new Error("--redis-cert-file and --redis-key-file go together");
  return {
    ...(options.redisUsername ? { username: options.redisUsername } : {}),
    ...(options.redisPassword ? { password: options.redisPassword } : {}),
    ...(options.redisHmacKey ? { hmacKey: options.redisHmacKey } : {}),
    ...(given.length > 0
      ? { tls: Object.fromEntries(given.map(([key, flag, path]) => [key, read(flag, path)])) }
      : {}),
  };
}

export function attributionSettings(options: OperatorOptions): AttributionSettings | undefined {
  if (!options.authorAttribution) return undefined;
  const transport = options.authorAttributionTransport;
  if (transport === "redis" && !options.redisAddr) {
    throw new Error(
      "--author-attribution-transport=redis keeps audit facts in Redis and needs --redis-addr: set it, or run with --author-attribution-transport=memory (one replica) or --author-attribution=false",
    );
  }
  if (transport === "memory" && options.replicaCount !== 1) {
    throw new Error(
      `--author-attribution-transport=memory keeps facts in one process and is refused with --replica-count=${options.replicaCount}`,
    );
  }
  const address = parseBindAddress(options.auditBindAddress);
  if (!address) throw new Error("--audit-bind-address=0: attribution needs its audit ingress");
  const read = (file: string) => readFileSync(join(options.auditCertDir, file), "utf8");
  return {
    graceMs: options.authorAttributionGrace,
    transport,
    ingress: {
      ...address,
      ...(options.auditInsecure
        ? {}
        : { tls: { cert: read("tls.crt"), key: read("tls.key"), ca: read("ca.crt") } }),
      ...(options.authorAttributionAuditRouteAnnotationKey
        ? { routeAnnotationKey: options.authorAttributionAuditRouteAnnotationKey }
        : {}),
    },
  };
}
