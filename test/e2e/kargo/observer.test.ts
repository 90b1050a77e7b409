// The Kargo observer against the real kube-apiserver. Argo CD and Kargo do not run here: the
// tests install their CRDs (crds.yaml) and write the status fields those controllers would
// write (an Application's status.summary.images, a Stage's status.freightHistory, a
// Promotion's status.phase), then read what the observer made.
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, EventsV1Api, type KubeConfig, type KubernetesObject } from "@kubernetes/client-node";
import { freightMissing, observedTypes, setupKargoObserver } from "../../../controllers/kargoobserver.ts";
import type { ObserveMode } from "../../../internal/kargo/views.ts";
import { ResourceClient } from "../../../internal/kube/resourceclient.ts";
import { Manager } from "../../../internal/operator/manager.ts";
import { repoRoot } from "../../support/binaries.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { installCrdFiles } from "../../support/manifests.ts";
import { eventually } from "../../support/wait.ts";
import { quiet } from "../../support/logger.ts";

const stageNs = "shop";
const appNs = "argocd";
const repo = "ghcr.io/org/app";
type Obj = KubernetesObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> };

function startObserver(kc: KubeConfig, mode: ObserveMode, identity = "observer", lease = false) {
  const logger = quiet;
  const manager = new Manager(kc, {
    logger,
    ...(lease
      ? {
          leaderElection: {
            namespace: appNs,
            name: "kargo-argocd-observer-leader",
            identity,
            leaseDurationMs: 4_000,
            renewDeadlineMs: 3_000,
            retryPeriodMs: 500,
          },
        }
      : {}),
  });
  setupKargoObserver(manager, mode, identity);
  const running = manager.start().catch(() => undefined);
  return {
    manager,
    stop: async () => {
      await manager.stop();
      await running;
    },
  };
}

describe("the Kargo observer: an image bumped by hand and synced by Argo CD becomes a Promotion", () => {
  let plane: ControlPlane;
  let kc: KubeConfig;
  let observer: ReturnType<typeof startObserver>;
  const client = (kind: keyof typeof observedTypes) => new ResourceClient<Obj>(kc, observedTypes[kind]);
  const apply = (kind: keyof typeof observedTypes, object: Obj) =>
    client(kind).apply(
      { apiVersion: `${observedTypes[kind].group}/v1alpha1`, kind: observedTypes[kind].kind, ...object },
      "test",
    );
  const setStatus = (
    kind: keyof typeof observedTypes,
    namespace: string,
    name: string,
    status: Record<string, unknown>,
  ) => client(kind).applyStatus({ metadata: { name, namespace }, status }, "test");
  const freight = (name: string, tag: string, warehouse = "app") =>
    apply("freight", {
      metadata: { name, namespace: stageNs },
      origin: { kind: "Warehouse", name: warehouse },
      images: [{ repoURL: repo, tag, digest: `sha256:${tag.replaceAll(".", "")}` }],
    } as Obj);
  /** A Stage requesting Freight from the Warehouse "app", currently at `tag` (Freight `current`). */
  const stage = async (name: string, current: string, tag: string) => {
    await apply("stage", {
      metadata: { name, namespace: stageNs },
      spec: { requestedFreight: [{ origin: { kind: "Warehouse", name: "app" }, sources: { direct: true } }] },
    });
    await setStatus("stage", stageNs, name, {
      freightHistory: [
        {
          items: {
            "Warehouse/app": {
              name: current,
              origin: { kind: "Warehouse", name: "app" },
              images: [{ repoURL: repo, tag }],
            },
          },
        },
      ],
    });
  };
  const application = async (
    name: string,
    stageName: string,
    images: string[],
    annotations: Record<string, string> = {},
  ) => {
    await apply("application", {
      metadata: {
        name,
        namespace: appNs,
        annotations: { "kargo.akuity.io/authorized-stage": `${stageNs}:${stageName}`, ...annotations },
      },
      spec: { project: "default" },
    });
    await setStatus("application", appNs, name, { summary: { images } });
  };
  const promotionsOf = async (stageName: string) =>
    (await client("promotion").list(stageNs)).items.filter(
      (p) => (p.spec as { stage?: string }).stage === stageName,
    );
  const onePromotion = (stageName: string, count = 1) =>
    eventually(
      async () => {
        const found = await promotionsOf(stageName);
        return found.length === count && found;
      },
      { timeoutMs: 20_000, description: `${count} Promotion(s) of Stage ${stageName}` },
    );
  /** A Stage whose Application drifts onto Freight "f2": once its Promotion exists, every earlier reconcile ran. */
  let witnesses = 0;
  const witness = async () => {
    const name = `witness-${++witnesses}`;
    await stage(name, "f1", "1.0.0");
    await application(name, name, [`${repo}:1.1.0`]);
    await onePromotion(name);
  };

  before(async () => {
    plane = await ControlPlane.start();
    kc = plane.kubeConfig();
    await installCrdFiles(kc, [join(repoRoot, "test/e2e/kargo/crds.yaml")]);
    const core = kc.makeApiClient(CoreV1Api);
    for (const name of [stageNs, appNs]) await core.createNamespace({ body: { metadata: { name } } });
    await apply("warehouse", {
      metadata: { name: "app", namespace: stageNs },
      spec: { subscriptions: [{ image: { repoURL: repo } }] },
    });
    for (const [name, tag] of [
      ["f1", "1.0.0"],
      ["f2", "1.1.0"],
      ["f3", "1.2.0"],
    ] as const)
      await freight(name, tag);
    observer = startObserver(kc, "all");
  });
  after(async () => {
    await observer?.stop();
    await plane?.stop();
  });

  it("a drifted tag with a matching Freight creates one Promotion with the seed's labels", async () => {
    await stage("prod", "f1", "1.0.0");
    await application("shop-prod", "prod", [`${repo}:1.1.0`, "docker.io/library/redis:7"]);
    const [promotion] = await onePromotion("prod");
    assert.match(promotion!.metadata!.name!, /^prod-observer-/);
    assert.deepEqual(promotion!.metadata!.labels, {
      "app.kubernetes.io/managed-by": "kargo-argocd-observer",
      "kargo-observer.kutlak.cc/stage": "prod",
      "kargo-observer.kutlak.cc/freight": "f2",
    });
    assert.deepEqual(promotion!.spec, { stage: "prod", freight: "f2" });
  });

  it("a Promotion in flight blocks a second", async () => {
    // Argo CD syncs another hand bump while Kargo has not run the first Promotion.
    await setStatus("application", appNs, "shop-prod", { summary: { images: [`${repo}:1.2.0`] } });
    await witness();
    assert.equal((await promotionsOf("prod")).length, 1, "still only the first");
    // Kargo runs it: the Stage now holds f2, and the drift onto f3 is promoted.
    const [first] = await promotionsOf("prod");
    await setStatus("promotion", stageNs, first!.metadata!.name!, { phase: "Succeeded" });
    await stage("prod", "f2", "1.1.0");
    const promotions = await onePromotion("prod", 2);
    assert.ok(promotions.some((p) => (p.spec as { freight?: string }).freight === "f3"));
  });

  it("a failed Promotion's Freight is not retried until it is deleted", async () => {
    const failed = (await promotionsOf("prod")).find(
      (p) => (p.spec as { freight?: string }).freight === "f3",
    )!;
    await setStatus("promotion", stageNs, failed.metadata!.name!, { phase: "Failed" });
    await witness();
    assert.equal((await promotionsOf("prod")).length, 2, "f3 is not tried again");
    await client("promotion").delete(stageNs, failed.metadata!.name!);
    const retried = await eventually(
      async () => {
        const found = (await promotionsOf("prod")).filter(
          (p) => (p.spec as { freight?: string }).freight === "f3",
        );
        return found.length === 1 && found[0]!.metadata!.name !== failed.metadata!.name && found[0];
      },
      { timeoutMs: 20_000, description: "a new Promotion of f3" },
    );
    await setStatus("promotion", stageNs, retried.metadata!.name!, { phase: "Succeeded" });
    await stage("prod", "f3", "1.2.0");
  });

  it("equal tags do nothing", async () => {
    await stage("steady", "f2", "1.1.0");
    await application("shop-steady", "steady", [`${repo}:1.1.0`]);
    await witness();
    assert.deepEqual(await promotionsOf("steady"), []);
  });

  it("drift outside the Stage's subscribed repositories is ignored", async () => {
    await stage("sidecar", "f2", "1.1.0");
    await application("shop-sidecar", "sidecar", [`${repo}:1.1.0`, "ghcr.io/org/unsubscribed:9.9.9"]);
    await witness();
    assert.deepEqual(await promotionsOf("sidecar"), []);
  });

  it("the ignore annotation opts out", async () => {
    await stage("ignored", "f1", "1.0.0");
    await application("shop-ignored", "ignored", [`${repo}:1.1.0`], {
      "kargo-observer.kutlak.cc/ignore": "true",
    });
    await witness();
    assert.deepEqual(await promotionsOf("ignored"), []);
  });

  it("no matching Freight emits FreightMissing and sets the gauge", async () => {
    await stage("ahead", "f1", "1.0.0");
    await application("shop-ahead", "ahead", [`${repo}:9.9.9`]);
    const gauge = async () =>
      (await freightMissing.get()).values.find((v) => v.labels.stage_name === "ahead")?.value;
    await eventually(async () => (await gauge()) === 1, { timeoutMs: 20_000, description: "the gauge at 1" });
    // The Event is recorded on its own, after the gauge: it is waited for, not read once.
    const missing = await eventually(
      async () =>
        (await kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace: appNs })).items.find(
          (e) => e.reason === "FreightMissing" && e.regarding?.name === "shop-ahead",
        ),
      { timeoutMs: 20_000, description: "the FreightMissing Event" },
    );
    assert.match(missing.note ?? "", /9\.9\.9/);
    await freight("f9", "9.9.9");
    const [promotion] = await onePromotion("ahead");
    assert.equal((promotion!.spec as { freight?: string }).freight, "f9");
    assert.equal(await gauge(), 0, "back to 0 once resolved");
  });

  it("opt-in mode ignores unannotated Applications", async () => {
    await observer.stop();
    observer = startObserver(kc, "opt-in");
    await stage("unasked", "f1", "1.0.0");
    await application("shop-unasked", "unasked", [`${repo}:1.1.0`]);
    await stage("asked", "f1", "1.0.0");
    await application("shop-asked", "asked", [`${repo}:1.1.0`], {
      "kargo-observer.kutlak.cc/observe": "true",
    });
    await onePromotion("asked");
    assert.deepEqual(await promotionsOf("unasked"), []);
  });

  it("two replicas: only the leader reconciles", async () => {
    await observer.stop();
    const replicas = [
      startObserver(kc, "all", "replica-a", true),
      startObserver(kc, "all", "replica-b", true),
    ];
    try {
      await stage("ha", "f1", "1.0.0");
      await application("shop-ha", "ha", [`${repo}:1.1.0`]);
      await onePromotion("ha");
      // Both replicas watch the same Application; a second reconciler would have made a second Promotion.
      await witness();
      assert.equal((await promotionsOf("ha")).length, 1);
      const leaders = replicas.filter((r) => r.manager.isLeader);
      assert.equal(leaders.length, 1, "one leader");
    } finally {
      for (const replica of replicas) await replica.stop();
      observer = startObserver(kc, "all");
    }
  });
});
