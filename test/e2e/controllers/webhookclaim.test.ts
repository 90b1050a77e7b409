// The WebhookClaim controller alone against a real API server: it judges who names the claim,
// its URL and its Secret, and writes its conditions. No Git server and no webhook receiver: a
// GitTarget's writes are known from its GitBranch and GitProvider as objects, and nothing is
// POSTed. The Secret is not watched, so a Secret created after the claim is picked up by the
// recheck, shortened here to a second.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, EventsV1Api, type KubeConfig } from "@kubernetes/client-node";
import { setupWebhookClaimController } from "../../../controllers/webhookclaim.ts";
import {
  gitBranches,
  gitProviders,
  gitTargets,
  webhookClaims,
  type WebhookClaim,
} from "../../../generated/v1alpha3/index.ts";
import { Following } from "../../../internal/applier/claim/index.ts";
import { Manager } from "../../../internal/operator/manager.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { quiet } from "../../support/logger.ts";
import { installCrds } from "../../support/manifests.ts";
import { shippedOperatorIdentity } from "../../support/shippedrbac.ts";
import { eventually } from "../../support/wait.ts";
import { condition, conditionOf } from "./helpers.ts";

const apiVersion = "configbutler.ai/v1alpha3" as const;
const namespace = "shop";
const token = "webhook-hmac-key-1";

describe("the WebhookClaim controller", () => {
  let plane: ControlPlane;
  let kc: KubeConfig;
  let core: CoreV1Api;
  let manager: Manager;
  let running: Promise<void>;

  before(async () => {
    plane = await ControlPlane.start();
    kc = plane.kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    await installCrds(kc);
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    // What a GitTarget's writes are read from; no controller needs to make them Ready.
    await gitProviders(kc).apply(
      {
        apiVersion,
        kind: "GitProvider",
        metadata: { name: "origin", namespace },
        spec: { url: "https://git.example.com/shop/state.git" },
      },
      "test",
    );
    await gitBranches(kc).apply(
      {
        apiVersion,
        kind: "GitBranch",
        metadata: { name: "main", namespace },
        spec: { gitProviderRef: { name: "origin" }, branch: "main" },
      },
      "test",
    );
    // As a user installs it: its ServiceAccount under config/rbac's roles, not the admin.
    manager = new Manager((await shippedOperatorIdentity(plane, kc)).kubeConfig, { logger: quiet });
    setupWebhookClaimController(manager, new Following(), { allowLoopbackHttp: false, recheckMs: 1_000 });
    running = manager.start();
  });
  after(async () => {
    await manager?.stop();
    await running;
    await plane?.stop();
  });

  const claims = () => webhookClaims(kc);
  const applyClaim = (name: string, url: string) =>
    claims().apply(
      {
        apiVersion,
        kind: "WebhookClaim",
        metadata: { name, namespace },
        spec: { url, secretRef: { name: `${name}-hmac` } },
      },
      "test",
    );
  const applySecret = (name: string) =>
    core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: `${name}-hmac` }, stringData: { token } },
    });
  /** A GitTarget naming the claim, whose GitBranch and GitProvider exist, so its writes are known. */
  const applyTarget = (name: string, claim: string) =>
    gitTargets(kc).apply(
      {
        apiVersion,
        kind: "GitTarget",
        metadata: { name, namespace },
        spec: {
          gitBranchRef: { name: "main" },
          kubeProviderRef: { name: "self" },
          path: `clusters/${name}`,
          applierClaimRef: { kind: "WebhookClaim", name: claim },
        },
      },
      "test",
    );
  const configuredIs = (name: string, status: string, reason: string) =>
    conditionOf<WebhookClaim>(claims(), namespace, name, "Configured", status, reason);
  const eventReasons = async (name: string) =>
    (await kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace })).items
      .filter((e) => e.regarding?.kind === "WebhookClaim" && e.regarding.name === name)
      .map((e) => `${e.type}/${e.reason}`);

  it("a missing Secret is SecretNotFound; once created, the claim a GitTarget names is Configured True and InControl Suspended", async () => {
    const url = "https://deploy.example.com/hook/shop";
    await applyClaim("deploy", url);
    const unnamed = await configuredIs("deploy", "Unknown", "NotReferenced");
    assert.equal(condition(unnamed, "Ready")?.status, "True");

    await applyTarget("web", "deploy");
    const missing = await configuredIs("deploy", "False", "SecretNotFound");
    assert.match(condition(missing, "Configured")!.message, /shop\/deploy-hmac does not exist/);
    assert.equal(condition(missing, "InControl")?.status, "False");
    assert.equal(condition(missing, "Stalled")?.status, "True");

    await applySecret("deploy");
    const configured = await configuredIs("deploy", "True", "Succeeded");
    const message = condition(configured, "Configured")!.message;
    assert.match(message, /shop\/web/);
    assert.ok(message.includes(url), message);
    assert.ok(!JSON.stringify(configured.status).includes(token), "no condition shows the token");
    const held = await conditionOf<WebhookClaim>(
      claims(),
      namespace,
      "deploy",
      "InControl",
      "True",
      "Suspended",
    );
    assert.equal(condition(held, "Ready")?.status, "True");
    await eventually(
      async () => {
        const reasons = await eventReasons("deploy");
        return reasons.includes("Warning/SecretNotFound") && reasons.includes("Normal/Configured");
      },
      { description: "a Warning SecretNotFound and a Normal Configured Event" },
    );
  });

  it("plain http to a host that is not loopback is InsecureURL", async () => {
    await applySecret("plain");
    await applyClaim("plain", "http://deploy.example.com/hook/shop");
    await applyTarget("plain", "plain");
    const refused = await configuredIs("plain", "False", "InsecureURL");
    assert.match(condition(refused, "Configured")!.message, /use https/);
    assert.equal(condition(refused, "InControl")?.reason, "InsecureURL");
    assert.equal(condition(refused, "Ready")?.status, "False");
  });
});
