import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  attributionSettings,
  checkReplicas,
  envNameOf,
  flagParser,
  parseFlags,
  redisAccess,
} from "../../../cmd/flags.ts";
import { parseBindAddress } from "../../../internal/telemetry/servers.ts";

/** A parser that throws instead of exiting, with its error output captured. */
function strictParser() {
  const errors: string[] = [];
  const command = flagParser()
    .exitOverride()
    .configureOutput({ writeErr: (text) => errors.push(text), writeOut: () => undefined });
  return { command, errors };
}

describe("operator flags", () => {
  it("every flag may come from the environment as GITOPS_REVERSER_<FLAG>, and one on the command line wins", () => {
    const set = {
      GITOPS_REVERSER_REDIS_ADDR: "redis:6379",
      GITOPS_REVERSER_AUTHOR_ATTRIBUTION: "false",
      GITOPS_REVERSER_IN_CLUSTER_KUBE_PROVIDERS: "team-a/self,team-b/self",
      GITOPS_REVERSER_LOG_LEVEL: "debug",
      GITOPS_REVERSER_METRICS_SECURE: "false",
    };
    Object.assign(process.env, set);
    try {
      const options = parseFlags(["--log-level=warn"], strictParser().command);
      assert.equal(options.redisAddr, "redis:6379");
      assert.equal(options.authorAttribution, false);
      assert.deepEqual(options.inClusterKubeProviders, ["team-a/self", "team-b/self"]);
      assert.equal(options.metricsSecure, false);
      assert.equal(options.logLevel, "warn", "the command line wins");
      // A value from the environment is checked as the flag's is, and the refusal names it.
      process.env.GITOPS_REVERSER_LOG_LEVEL = "loud";
      const { command, errors } = strictParser();
      assert.throws(() => parseFlags([], command));
      assert.match(errors.join(""), /from env 'GITOPS_REVERSER_LOG_LEVEL' is invalid/);
    } finally {
      for (const name of Object.keys(set)) delete process.env[name];
    }
  });

  it("names each flag's environment variable in --help", () => {
    const help = flagParser().helpInformation();
    for (const option of flagParser().options)
      assert.ok(help.includes(envNameOf(option.long!)), `${option.long} shows ${envNameOf(option.long!)}`);
  });

  it("defaults as the seeds give them", () => {
    const options = parseFlags([], strictParser().command);
    assert.deepEqual(options, {
      inClusterKubeProviders: [],
      allowKubeconfigExec: false,
      allowKubeconfigInsecureTls: false,
      redisAddr: "",
      redisCaFile: "",
      redisCertFile: "",
      redisHmacKey: "",
      redisKeyFile: "",
      redisPassword: "",
      redisUsername: "",
      authorAttribution: true,
      authorAttributionGrace: 3_000,
      authorAttributionTransport: "redis",
      replicaCount: 1,
      auditBindAddress: ":9444",
      receiverBindAddress: "",
      webhookClaimAllowLoopbackHttp: false,
      auditCertDir: "/tmp/k8s-audit-server/serving-certs",
      auditInsecure: false,
      branchBufferMaxSize: 8 * 1024 * 1024,
      gitRefreshInterval: 600_000,
      commitRequestRetention: 3_600_000,
      applierClaimRecheckInterval: 60_000,
      additionalSensitiveResources: [],
      workerRoot: "/tmp/gitops-reverser-workers",
      kustomizePath: "kustomize",
      metricsBindAddress: ":8443",
      metricsSecure: true,
      metricsCertPath: "",
      metricsCertName: "tls.crt",
      metricsCertKey: "tls.key",
      healthProbeBindAddress: ":8081",
      leaderElect: false,
      // Shorter than controller-runtime's 15 s / 10 s: a failover under 10 s (leaderelection.ts).
      leaderElectionLeaseDuration: 8_000,
      leaderElectionRenewDeadline: 5_000,
      leaderElectionRetryPeriod: 2_000,
      logLevel: "info",
      logFormat: "json",
    });
  });

  it("reads Go-style booleans, bare or with =true/=false", () => {
    assert.equal(parseFlags(["--leader-elect"], strictParser().command).leaderElect, true);
    assert.equal(parseFlags(["--leader-elect=true"], strictParser().command).leaderElect, true);
    assert.equal(parseFlags(["--leader-elect=false"], strictParser().command).leaderElect, false);
    assert.equal(parseFlags(["--metrics-secure=false"], strictParser().command).metricsSecure, false);
  });

  it("reads lists, durations and quantities", () => {
    const options = parseFlags(
      [
        "--in-cluster-kube-providers=team-a/in-cluster, platform/self",
        "--additional-sensitive-resources=sealedsecrets.bitnami.com,configmaps",
        "--git-refresh-interval=2m",
        "--applier-claim-recheck-interval=10s",
        "--branch-buffer-max-size=16Mi",
        "--worker-root=/var/lib/gitops-reverser",
        "--leader-election-lease-duration=6s",
        "--leader-election-renew-deadline=4s",
        "--leader-election-retry-period=500ms",
      ],
      strictParser().command,
    );
    assert.deepEqual(options.inClusterKubeProviders, ["team-a/in-cluster", "platform/self"]);
    assert.deepEqual(options.additionalSensitiveResources, ["sealedsecrets.bitnami.com", "configmaps"]);
    assert.equal(options.gitRefreshInterval, 120_000);
    assert.equal(options.applierClaimRecheckInterval, 10_000);
    assert.equal(options.branchBufferMaxSize, 16 * 1024 * 1024);
    assert.equal(options.workerRoot, "/var/lib/gitops-reverser");
    assert.equal(options.leaderElectionLeaseDuration, 6_000);
    assert.equal(options.leaderElectionRenewDeadline, 4_000);
    assert.equal(options.leaderElectionRetryPeriod, 500);
  });

  it("refuses bad values with a message that names the flag", () => {
    const cases: [string, RegExp][] = [
      ["--in-cluster-kube-providers=just-a-name", /"just-a-name" is not namespace\/name/],
      ["--git-refresh-interval=10 minutes", /--git-refresh-interval: invalid duration/],
      ["--applier-claim-recheck-interval=500ms", /--applier-claim-recheck-interval: "500ms" is under 1s/],
      ["--branch-buffer-max-size=8MB", /--branch-buffer-max-size: invalid quantity/],
      ["--leader-elect=yes", /expected true or false/],
      ["--log-format=xml", /"xml" is not one of json, text/],
      ["--no-such-flag", /unknown option/],
      ["--leader-election-lease-duration=15", /--leader-election-lease-duration: invalid duration/],
      // A holder must stop before its Lease can be taken, and try more than once before it stops.
      [
        "--leader-election-lease-duration=5s",
        /lease-duration \(5s\) must be longer than --leader-election-renew-deadline \(5s\)/,
      ],
      [
        "--leader-election-retry-period=5s",
        /renew-deadline \(5s\) must be longer than --leader-election-retry-period \(5s\)/,
      ],
      ["--leader-election-retry-period=0", /retry-period must be above 0/],
    ];
    for (const [arg, message] of cases) {
      const { command, errors } = strictParser();
      assert.throws(() => parseFlags([arg], command), Error, arg);
      assert.match(errors.join(""), message, arg);
    }
  });
});

describe("parseBindAddress", () => {
  it("reads :port as every interface, host:port as given, and 0 as off", () => {
    assert.deepEqual(parseBindAddress(":8080"), { host: "0.0.0.0", port: 8080 });
    assert.deepEqual(parseBindAddress("127.0.0.1:9090"), { host: "127.0.0.1", port: 9090 });
    assert.equal(parseBindAddress("0"), undefined);
    assert.throws(() => parseBindAddress("8080"), /invalid bind address/);
  });

  it("more than one replica needs --leader-elect and --redis-addr; one needs neither", () => {
    const options = (args: string[]) => parseFlags(args, strictParser().command);
    assert.doesNotThrow(() => checkReplicas(options([])));
    assert.throws(
      () => checkReplicas(options(["--replica-count=3", "--redis-addr=redis:6379"])),
      /--replica-count=3 needs --leader-elect=true/,
    );
    assert.throws(
      () => checkReplicas(options(["--replica-count=2", "--leader-elect"])),
      /--replica-count=2 needs --redis-addr: the durable write queue/,
    );
    assert.doesNotThrow(() =>
      checkReplicas(options(["--replica-count=2", "--leader-elect", "--redis-addr=redis:6379"])),
    );
  });

  it("memory transport is refused with two replicas; the redis transport needs --redis-addr", () => {
    const options = (args: string[]) =>
      parseFlags(["--author-attribution", "--audit-insecure", ...args], strictParser().command);
    assert.throws(
      () => attributionSettings(options(["--author-attribution-transport=memory", "--replica-count=2"])),
      /refused with --replica-count=2/,
    );
    assert.throws(() => attributionSettings(options([])), /needs --redis-addr: set it/);
    assert.equal(
      attributionSettings(options(["--redis-addr=redis:6379", "--replica-count=2"]))?.transport,
      "redis",
      "the redis transport serves any number of replicas",
    );
    assert.equal(attributionSettings(options(["--author-attribution-transport=memory"]))?.graceMs, 3_000);
    assert.throws(
      () => attributionSettings(parseFlags([], strictParser().command)),
      /needs --redis-addr: set it, or run with --author-attribution-transport=memory \(one replica\) or --author-attribution=false/,
      "on by default, as the seeds say: the redis transport then needs an address",
    );
    assert.equal(
      attributionSettings(parseFlags(["--author-attribution=false"], strictParser().command)),
      undefined,
      "off when asked",
    );
  });
});

describe("Redis access from the flags", () => {
  const options = (args: string[]) => parseFlags(args, flagParser().exitOverride());
  it("reads the TLS files for rediss://, and refuses them for a plain address or a lone certificate", () => {
    assert.throws(
      () => redisAccess(options(["--redis-addr=redis:6379", "--redis-ca-file=/dev/null"])),
      /--redis-ca-file is for TLS: give --redis-addr as rediss:\/\/host:port/,
    );
    assert.throws(
      () => redisAccess(options(["--redis-addr=rediss://redis:6379", "--redis-cert-file=/dev/null"])),
      /go together/,
    );
    assert.throws(
      () => redisAccess(options(["--redis-addr=rediss://redis:6379", "--redis-ca-file=/nowhere/ca.crt"])),
      /--redis-ca-file=\/nowhere\/ca.crt: ENOENT/,
    );
    assert.deepEqual(
      redisAccess(
        options(["--redis-addr=rediss://redis:6379", "--redis-ca-file=/dev/null", "--redis-password=pw"]),
      ),
      { password: "pw", tls: { ca: "" } },
    );
  });
});
