// KubeProvider.spec.client, counted where it matters: the source cluster's API server audits
// every request of each provider's identity as it receives it, so the rate is the server's own
// count, not the operator's word for it.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import type { KubeProvider } from "../../../generated/v1alpha3/index.ts";
import { AuditSink } from "../../support/auditsink.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { installCrds } from "../../support/manifests.ts";
import { startOperator, type RunningOperator } from "../../support/operator.ts";
import { eventually } from "../../support/wait.ts";
import { clients, conditionOf } from "./helpers.ts";

const throttledUser = "throttled-provider";
const otherUser = "other-provider";

/** Every request of the named users, at the RequestReceived stage only: one event per request. */
const policy = {
  apiVersion: "audit.k8s.io/v1",
  kind: "Policy",
  omitStages: ["ResponseStarted", "ResponseComplete", "Panic"],
  rules: [{ level: "Metadata", users: [throttledUser, otherUser] }, { level: "None" }],
};

/**
 * How far the busiest window of `times` (ms, sorted) goes over burst + qps × its length: at
 * most 0 for requests a bucket of qps and burst let through.
 */
function worstExcess(times: number[], qps: number, burst: number): number {
  let worst = -Infinity;
  for (let i = 0; i < times.length; i++) {
    for (let j = i; j < times.length; j++) {
      worst = Math.max(worst, j - i + 1 - (burst + (qps * (times[j]! - times[i]!)) / 1000));
    }
  }
  return worst;
}

describe("a KubeProvider's spec.client", () => {
  let control: ControlPlane;
  let source: ControlPlane;
  let sink: AuditSink;
  let kc: KubeConfig;
  let operator: (RunningOperator & { errors: string[] }) | undefined;

  before(async () => {
    sink = await AuditSink.start();
    [control, source] = await Promise.all([
      ControlPlane.start(),
      ControlPlane.start({ audit: { url: sink.url(), policy } }),
    ]);
    kc = control.kubeConfig();
    await installCrds(kc);
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: "team-c" } } });
  });
  after(async () => {
    await operator?.stop();
    await Promise.all([control?.stop(), source?.stop()]);
    await sink?.stop();
  });

  /**
   * When the source API server received each request of `user`'s connection from `since` on,
   * sorted. GET /version is the reconciler's reachability check, once a pass (every second
   * here), which has a throttle of its own so that a slow provider's queue never holds up
   * another provider's reconcile.
   */
  const receivedFrom = (user: string, since = 0) =>
    sink.events
      .filter((e) => e.user.username === user && e.requestURI !== "/version")
      .filter((e) => e.requestReceivedTimestamp !== undefined)
      .map((e) => Date.parse(e.requestReceivedTimestamp!))
      .filter((t) => t >= since)
      .sort((a, b) => a - b);

  const provider = (name: string, client?: KubeProvider["spec"]["client"]): KubeProvider => ({
    apiVersion: "configbutler.ai/v1alpha3",
    kind: "KubeProvider",
    metadata: { name, namespace: "team-c" },
    spec: { secretRef: { name: `${name}-kubeconfig` }, ...(client ? { client } : {}) },
  });

  it("a provider with qps 2 makes at most 2 requests a second beyond its burst, and a change of it takes effect without a restart, leaving other providers' watches alone", async () => {
    const { providers } = clients(kc);
    const core = kc.makeApiClient(CoreV1Api);
    for (const [name, user] of [
      ["throttled", throttledUser],
      ["other", otherUser],
    ] as const) {
      const identity = await source.mintUser(user, ["system:masters"]);
      await core.createNamespacedSecret({
        namespace: "team-c",
        body: {
          metadata: { name: `${name}-kubeconfig` },
          stringData: { value: await readFile(identity.kubeconfigPath, "utf8") },
        },
      });
    }
    await providers.apply(provider("throttled", { qps: 2, burst: 2 }), "test");
    await providers.apply(provider("other"), "test");
    operator = startOperator(kc);
    await conditionOf(providers, "team-c", "throttled", "Ready", "True");
    await conditionOf(providers, "team-c", "other", "Ready", "True");

    // A new context's first discovery asks for every group version at once: a burst of a few
    // dozen requests, which the throttle spreads out at 2 a second.
    await eventually(() => receivedFrom(throttledUser).length >= 16, {
      timeoutMs: 60_000,
      description: () => `16 throttled requests (seen ${receivedFrom(throttledUser).length})`,
    });
    // The margin: the server's receipt times jitter against the client's sends.
    const margin = 2;
    const throttled = worstExcess(receivedFrom(throttledUser), 2, 2);
    assert.ok(
      throttled <= margin,
      `the provider went ${throttled} requests over 2 + 2/s in its busiest window`,
    );
    // The other provider, on the defaults, sent its discovery burst at once: what the throttle
    // prevents, so the bound above can fail.
    assert.ok(
      worstExcess(receivedFrom(otherUser), 2, 2) > margin,
      "an unthrottled discovery would break the bound",
    );

    const contexts = operator.sourceContexts;
    const [throttledBefore, otherBefore] = [contexts.get("team-c/throttled"), contexts.get("team-c/other")];
    assert.ok(throttledBefore && otherBefore);
    const changedAt = Date.now();
    await providers.apply(provider("throttled", { qps: 1000, burst: 1000 }), "test");
    await eventually(() => contexts.get("team-c/throttled") !== throttledBefore, {
      timeoutMs: 60_000,
      description: "the changed provider's context to be rebuilt",
    });
    // The rebuilt context's discovery goes out at the new rate: faster than the old limit allows.
    await eventually(() => worstExcess(receivedFrom(throttledUser, changedAt), 2, 2) > margin, {
      timeoutMs: 60_000,
      description: () =>
        `requests since the change above the old limit (${receivedFrom(throttledUser, changedAt).length} so far)`,
    });
    assert.equal(contexts.get("team-c/other"), otherBefore, "the other provider's context is untouched");
    assert.equal(operator.errors.length, 0, operator.errors.join("\n"));
  });
});
