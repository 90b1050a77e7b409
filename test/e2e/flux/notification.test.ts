// The real Flux notification-controller (test/support/fluxnotification.ts) beside the real
// source-controller and kustomize-controller (test/support/flux.ts): a generic-hmac Receiver takes
// a request signed as the operator signs its WebhookClaim requests
// (internal/applier/webhook/signature.ts), asks its GitRepository and Kustomization to reconcile,
// and the pushed commit is applied. A request signed with another key is refused and applies
// nothing. The GitRepository and Kustomization reconcile every hour, so only the Receiver makes
// Flux fetch and apply within the test.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { sign, signatureHeader } from "../../../internal/applier/webhook/signature.ts";
import type { ResourceClient } from "../../../internal/kube/resourceclient.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { reconcileRequestAnnotation, type FluxObject } from "../../support/flux.ts";
import {
  startFluxWithNotification,
  type FluxWithNotification,
  type Receiver,
} from "../../support/fluxnotification.ts";
import { GitServer } from "../../support/gitserver.ts";
import { eventually } from "../../support/wait.ts";

const namespace = "apps";
const repository = "fleet";
const user = { username: "flux", password: "flux-password" };
/** The Receiver's Secret's token: the HMAC key. */
const token = "receiver-hmac-key";

function configMap(name: string, data: Record<string, string>): string {
  return [
    "apiVersion: v1",
    "kind: ConfigMap",
    "metadata:",
    `  name: ${name}`,
    `  namespace: ${namespace}`,
    "data:",
    ...Object.entries(data).map(([key, value]) => `  ${key}: ${value}`),
    "",
  ].join("\n");
}

describe("Flux notification-controller, built from Go modules", () => {
  let plane: ControlPlane;
  let git: GitServer;
  let flux: FluxWithNotification;
  let kc: KubeConfig;
  let core: CoreV1Api;
  let sources: ResourceClient<FluxObject>;
  let kustomizations: ResourceClient<FluxObject>;
  let receivers: ResourceClient<Receiver>;

  const configMapInCluster = (name: string) =>
    core.readNamespacedConfigMap({ namespace, name }).catch(() => undefined);

  before(async () => {
    plane = await ControlPlane.start();
    kc = plane.kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    git = await GitServer.start({ users: [user] });
    await git.createRepository(repository);
    flux = await startFluxWithNotification(plane);
    sources = flux.gitRepositories(kc);
    kustomizations = flux.kustomizations(kc);
    receivers = flux.receivers(kc);
    await core.createNamespace({ body: { metadata: { name: namespace } } });
  });
  after(async () => {
    await flux?.stop();
    await git?.close();
    await plane?.stop();
  });

  it("the real Flux notification-controller's generic-hmac Receiver accepts our signed request, and its Kustomization applies the commit", async () => {
    assert.ok(flux.crds.includes("receivers.notification.toolkit.fluxcd.io"), "Receiver CRD installed");
    assert.ok(flux.receiverUrl, "the receiver server's URL");

    // What Flux applies before the Receiver is called: the first commit, fetched and applied once
    // as the objects are created.
    const first = await git.pushForeignCommit(repository, {
      files: { "deploy/settings.yaml": configMap("settings", { color: "blue" }) },
    });
    await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: "git-credentials" }, stringData: user },
    });
    await sources.apply(
      {
        metadata: { name: "fleet", namespace },
        spec: {
          interval: "1h",
          url: git.repositoryUrl(repository),
          ref: { branch: "main" },
          secretRef: { name: "git-credentials" },
        },
      },
      "test",
    );
    await kustomizations.apply(
      {
        metadata: { name: "apps", namespace },
        spec: {
          interval: "1h",
          path: "./deploy",
          prune: true,
          sourceRef: { kind: "GitRepository", name: "fleet" },
        },
      },
      "test",
    );
    await eventually(
      async () =>
        (await kustomizations.get(namespace, "apps"))?.status?.lastAppliedRevision === `main@sha1:${first}`,
      { timeoutMs: 60_000, description: `Kustomization apps to apply ${first}` },
    );
    assert.equal((await configMapInCluster("settings"))?.data?.color, "blue");

    await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: "receiver-token" }, stringData: { token } },
    });
    await receivers.apply(
      {
        metadata: { name: "fleet", namespace },
        spec: {
          type: "generic-hmac",
          resources: [
            { apiVersion: "source.toolkit.fluxcd.io/v1", kind: "GitRepository", name: "fleet" },
            { apiVersion: "kustomize.toolkit.fluxcd.io/v1", kind: "Kustomization", name: "apps" },
          ],
          secretRef: { name: "receiver-token" },
        },
      },
      "test",
    );
    // The receiver server answers a Receiver's path only once the Receiver is Ready.
    const receiver = await eventually(
      async () => {
        const found = await receivers.get(namespace, "fleet");
        const ready = found?.status?.conditions?.find((c) => c.type === "Ready")?.status === "True";
        return ready && found?.status?.webhookPath !== undefined && found;
      },
      { timeoutMs: 60_000, description: "Receiver fleet Ready with a status.webhookPath" },
    );
    const webhookUrl = `${flux.receiverUrl}${receiver.status!.webhookPath!}`;

    // The commit the request announces: a new ConfigMap.
    const second = await git.pushForeignCommit(repository, {
      files: { "deploy/released.yaml": configMap("released", { release: "two" }) },
    });
    const body = JSON.stringify({
      repository: git.repositoryUrl(repository),
      branch: "main",
      commit: second,
      reason: "Push",
      claim: `${namespace}/apps`,
      token: "t1",
    });
    const post = (signature: string) =>
      fetch(webhookUrl, {
        method: "POST",
        headers: { "Content-Type": "application/json", [signatureHeader]: signature },
        body,
        signal: AbortSignal.timeout(10_000),
      });
    const requested = async (client: ResourceClient<FluxObject>, name: string) =>
      (await client.get(namespace, name))?.metadata?.annotations?.[reconcileRequestAnnotation];

    // Signed with another key: refused. The Receiver annotates its resources before it answers,
    // so with no request annotation on either, nothing was asked of Flux, and the hourly
    // intervals ask nothing either.
    const refused = await post(sign(body, "another-key"));
    await refused.body?.cancel();
    assert.ok(refused.status < 200 || refused.status >= 300, `wrong signature answered ${refused.status}`);
    assert.equal(await requested(sources, "fleet"), undefined);
    assert.equal(await requested(kustomizations, "apps"), undefined);
    assert.equal((await sources.get(namespace, "fleet"))?.status?.artifact?.revision, `main@sha1:${first}`);
    assert.equal(await configMapInCluster("released"), undefined);

    // Signed with the Secret's token: accepted, and the commit is fetched and applied.
    const accepted = await post(sign(body, token));
    await accepted.body?.cancel();
    assert.ok(accepted.status >= 200 && accepted.status < 300, `signed request answered ${accepted.status}`);
    assert.ok(await requested(sources, "fleet"), "the Receiver asked the GitRepository to reconcile");
    assert.ok(await requested(kustomizations, "apps"), "the Receiver asked the Kustomization to reconcile");
    const released = await eventually(async () => (await configMapInCluster("released")) ?? false, {
      timeoutMs: 60_000,
      description: `ConfigMap released from ${second}`,
    });
    assert.equal(released.data?.release, "two");
    const applied = await eventually(
      async () => {
        const found = await kustomizations.get(namespace, "apps");
        return found?.status?.lastAppliedRevision === `main@sha1:${second}` && found;
      },
      { timeoutMs: 60_000, description: `Kustomization apps to record ${second} as applied` },
    );
    assert.equal(applied.status?.lastAppliedRevision, `main@sha1:${second}`);
    assert.equal((await sources.get(namespace, "fleet"))?.status?.artifact?.revision, `main@sha1:${second}`);
  });
});
