import { startOperatorProcess } from "../../support/operator.ts";
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CoordinationV1Api } from "@kubernetes/client-node";
import { ControlPlane } from "../../support/controlplane.ts";
import { installCrds } from "../../support/manifests.ts";
import { eventually } from "../../support/wait.ts";

describe("the operator process", () => {
  let plane: ControlPlane;

  before(async () => {
    plane = await ControlPlane.start();
    await installCrds(plane.kubeConfig());
  });
  after(async () => {
    await plane?.stop();
  });

  it("serves probes and metrics, leads, and on SIGTERM stops cleanly and releases its lease", async () => {
    const {
      process: operator,
      metricsPort,
      probePort,
    } = await startOperatorProcess(plane.kubeconfigPath, plane.dir, [
      "--leader-elect",
      "--leader-election-namespace=default",
    ]);
    try {
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
          const body = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
          return /^gitopsreverser_leader 1$/m.test(body) && body;
        },
        { description: "the leader gauge to read 1" },
      );
      const names = [...metrics.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]!);
      assert.ok(names.length > 5);
      assert.ok(
        names.includes("gitopsreverser_placement_refusals_total"),
        "the writer's instruments are registered",
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
  });
});
