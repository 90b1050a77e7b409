import { startOperatorProcess } from "../../support/operator.ts";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { CoordinationV1Api, RbacAuthorizationV1Api } from "@kubernetes/client-node";
import { GitBranchReason, gitBranches } from "../../../generated/v1alpha3/index.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { declaredMetrics, documentedMetrics } from "../../support/metricsdoc.ts";
import { installCrds } from "../../support/manifests.ts";
import { repoRoot } from "../../support/binaries.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";
import { eventually } from "../../support/wait.ts";
import { scrape } from "../../support/scrape.ts";

describe("the operator process", () => {
  let plane: ControlPlane;
  let scratch: string;
  let bundle: string;

  before(async () => {
    plane = await ControlPlane.start();
    await installCrds(plane.kubeConfig());
    // The bundle the image runs, built as make build builds it.
    scratch = makeOwnedTempDir("bundle-test");
    bundle = join(scratch, "operator.mjs");
    execFileSync(process.execPath, [join(repoRoot, "hack/bundle.ts"), bundle], { stdio: "inherit" });
  });
  after(async () => {
    await plane?.stop();
    removeOwnedTempDir(scratch);
  });

  type Line = Record<string, unknown>;

  /** The JSON lines the process at `level` wrote by the time `done` holds; then it is stopped. */
  async function linesAt(level: string, done: (lines: Line[]) => Promise<boolean>) {
    const logDir = makeOwnedTempDir("log-level");
    const { process: operator, logFile } = startOperatorProcess(plane.kubeconfigPath, logDir, [
      `--log-level=${level}`,
    ]);
    const read = () =>
      readFileSync(logFile, "utf8")
        .split("\n")
        .filter((line) => line.startsWith("{"))
        .map((line) => JSON.parse(line) as Line);
    try {
      await eventually(
        () => {
          operator.assertRunning();
          return done(read());
        },
        {
          timeoutMs: 60_000,
          description: () => `the process at ${level}; last lines:\n${operator.logTail()}`,
        },
      );
      await operator.stop();
      return read();
    } finally {
      await operator.stop();
      removeOwnedTempDir(logDir);
    }
  }

  /** A GitBranch naming a GitProvider that does not exist, which a running process refuses in its status. */
  function branchWithoutProvider(name: string) {
    return gitBranches(plane.kubeConfig()).apply(
      {
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "GitBranch",
        metadata: { name, namespace: "default" },
        spec: { gitProviderRef: { name: "missing" }, branch: "main" },
      },
      "test",
    );
  }

  it("the bundle is ASCII, every comment's too, so V8 keeps its 10 MB of source one byte a character", () => {
    for (const file of [bundle, join(scratch, "kargo-observer.mjs")]) {
      const text = readFileSync(file, "utf8");
      const first = /[\u0080-\uffff]/.exec(text);
      assert.equal(
        first,
        null,
        `${file} holds ${JSON.stringify(first?.[0])} near ${JSON.stringify(text.slice((first?.index ?? 0) - 40, (first?.index ?? 0) + 10))}`,
      );
    }
  });

  it("--log-level=debug logs reconcile ids: each reconcile logs its controller, object and reconcile id; at warn no info line is written", async () => {
    await branchWithoutProvider("logged");
    const reconciling = (l: Line) =>
      l.message === "reconciling" &&
      l.controller === "gitbranch" &&
      l.object === "default/logged" &&
      typeof l.reconcileID === "string";
    const debug = await linesAt("debug", (lines) => Promise.resolve(lines.some(reconciling)));
    assert.equal(debug.find(reconciling)!.level, "debug");
    assert.ok(debug.some((l) => l.level === "info" && l.message === "starting"));

    // At warn the process works (it refuses a new GitBranch in its status) and writes no info
    // or debug line doing so.
    await branchWithoutProvider("logged-at-warn");
    const refused = async () => {
      const branch = await gitBranches(plane.kubeConfig()).get("default", "logged-at-warn");
      return (
        branch?.status?.conditions?.some((c) => c.reason === GitBranchReason.GitProviderNotFound) ?? false
      );
    };
    const warn = await linesAt("warn", refused);
    assert.deepEqual(
      warn.filter((l) => l.level === "info" || l.level === "debug"),
      [],
    );
  });

  it("serves probes and metrics (plain HTTP to anyone with --metrics-secure=false), leads, and on SIGTERM stops cleanly and releases its lease", async () => {
    await runs(undefined, ["--metrics-secure=false"], (port) => scrape(`http://127.0.0.1:${port}/metrics`));
  });

  it("metrics require a token and serve every documented name: bundled as the image runs it, over HTTPS to a ServiceAccount bound to read them, and it stops cleanly", async () => {
    const reader = await plane.serviceAccountToken("default", "process-scraper");
    const rbac = plane.kubeConfig().makeApiClient(RbacAuthorizationV1Api);
    await rbac.createClusterRole({
      body: {
        metadata: { name: "process-metrics-reader" },
        rules: [{ nonResourceURLs: ["/metrics"], verbs: ["get"] }],
      },
    });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: "process-metrics-reader" },
        roleRef: {
          apiGroup: "rbac.authorization.k8s.io",
          kind: "ClusterRole",
          name: "process-metrics-reader",
        },
        subjects: [{ kind: "ServiceAccount", namespace: "default", name: "process-scraper" }],
      },
    });
    await runs(bundle, [], async (port) => {
      const url = `https://127.0.0.1:${port}/metrics`;
      assert.equal((await scrape(url)).status, 401, "a scrape without a token is refused");
      return scrape(url, reader.kubeConfig.getCurrentUser()?.token);
    });
  });

  async function runs(
    entry: string | undefined,
    flags: string[],
    scrapeMetrics: (port: number) => Promise<{ status: number; body: string }>,
  ) {
    const { process: operator, port } = startOperatorProcess(
      plane.kubeconfigPath,
      plane.dir,
      ["--leader-elect", "--leader-election-namespace=default", ...flags],
      {},
      entry,
    );
    try {
      const [probePort, metricsPort] = [await port("probes"), await port("metrics")];
      await eventually(
        async () => {
          operator.assertRunning();
          return (await fetch(`http://127.0.0.1:${probePort}/readyz`)).status === 200;
        },
        { timeoutMs: 30_000, description: "/readyz to answer 200" },
      );
      assert.equal((await fetch(`http://127.0.0.1:${probePort}/healthz`)).status, 200);
      const metrics = await eventually(
        async () => {
          const { status, body } = await scrapeMetrics(metricsPort);
          assert.equal(status, 200, body);
          return /^gitopsreverser_leader 1$/m.test(body) && body;
        },
        { description: "the leader gauge to read 1" },
      );
      const names = [...declaredMetrics(metrics)];
      assert.deepEqual(
        [...documentedMetrics()].filter((n) => !names.includes(n)),
        [],
        "every instrument docs/metrics.md documents is served",
      );
      assert.deepEqual(
        names.filter((n) => !n.startsWith("gitopsreverser_")),
        [],
        "every metric carries the prefix",
      );

      const leases = plane.kubeConfig().makeApiClient(CoordinationV1Api);
      const held = await leases.readNamespacedLease({ namespace: "default", name: "gitops-reverser-leader" });
      assert.ok(held.spec?.holderIdentity, "the lease names its holder");

      await operator.stop();
      assert.deepEqual(await operator.exited, { code: 0, signal: null }, operator.logTail());
      const released = await leases.readNamespacedLease({
        namespace: "default",
        name: "gitops-reverser-leader",
      });
      assert.equal(released.spec?.holderIdentity, "", "a graceful stop gives the lease up for the standby");
    } finally {
      await operator.stop();
    }
  }
});
