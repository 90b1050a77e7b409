// The Kargo observer (kargo-argocd-observer.md): an image bumped by hand in Git and synced by
// Argo CD becomes a Kargo Promotion, so the Stage shows what runs. It reconciles Argo CD
// Applications that carry kargo.akuity.io/authorized-stage: load the Application and its Stage,
// decide the drift (internal/kargo/drift.ts), guard against repeats (guard.ts), and create one
// Promotion. Everything is read unstructured, through informers, so Argo CD's and Kargo's API
// versions never couple to this code.
import type { KubernetesObject } from "@kubernetes/client-node";
import { Gauge } from "prom-client";
import { driftOf, matchingFreight, subscribedRepositories } from "../internal/kargo/drift.ts";
import { promotionGuard } from "../internal/kargo/guard.ts";
import {
  applicationFingerprint,
  currentImages,
  deployedImages,
  freightView,
  managedBy,
  observedStage,
  promotionFor,
  promotionView,
  requestedWarehouses,
  subscriptionsOf,
  type ObserveMode,
} from "../internal/kargo/views.ts";
import { ResourceClient, type ResourceType } from "../internal/kube/resourceclient.ts";
import { informerSource } from "../internal/kube/sources.ts";
import { Controller, type Reconciler, type Request, type Result } from "../internal/operator/controller.ts";
import { EventRecorder } from "../internal/operator/events.ts";
import { type SharedInformer } from "../internal/operator/informer.ts";
import { storeKeyOf, keyOf, type NamespacedName } from "../internal/types/names.ts";
import type { Manager } from "../internal/operator/manager.ts";

const kargo = (kind: string, plural: string): ResourceType => ({
  group: "kargo.akuity.io",
  version: "v1alpha1",
  kind,
  plural,
  namespaced: true,
});
export const observedTypes = {
  application: {
    group: "argoproj.io",
    version: "v1alpha1",
    kind: "Application",
    plural: "applications",
    namespaced: true,
  },
  stage: kargo("Stage", "stages"),
  freight: kargo("Freight", "freights"),
  warehouse: kargo("Warehouse", "warehouses"),
  promotion: kargo("Promotion", "promotions"),
} satisfies Record<string, ResourceType>;

/** 1 while a Stage's drift has no Freight to promote, 0 once it has one or converged. */
export const freightMissing = new Gauge({
  name: "kargo_observer_freight_missing",
  help: "1 while a Stage's Application runs images no Freight of its requested Warehouses holds (FreightMissing), else 0.",
  labelNames: ["stage_namespace", "stage_name"] as const,
  registers: [],
});

/** How often an observed Application is looked at again, whatever its watches say: 10 minutes. */
export const resyncMs = 10 * 60_000;

type Informers = Record<keyof typeof observedTypes, SharedInformer<KubernetesObject>>;

export class ObserverReconciler implements Reconciler {
  constructor(
    private readonly informers: Informers,
    private readonly promotions: ResourceClient<KubernetesObject>,
    private readonly events: EventRecorder,
    private readonly mode: ObserveMode,
  ) {}

  async reconcile(request: Request): Promise<Result> {
    const app = this.informers.application.get(request.name, request.namespace);
    const ref = app && observedStage(app, this.mode);
    const stage = ref && this.informers.stage.get(ref.name, ref.namespace);
    if (!app || !ref || !stage) return {};
    const labels = { stage_namespace: ref.namespace, stage_name: ref.name };

    const origins = requestedWarehouses(stage);
    const subscribed = new Set(
      [...origins].flatMap((name) => {
        const warehouse = this.informers.warehouse.get(name, ref.namespace);
        return warehouse ? subscribedRepositories(subscriptionsOf(warehouse)) : [];
      }),
    );
    const drifted = driftOf(deployedImages(app), currentImages(stage), subscribed);
    if (drifted.length === 0) {
      freightMissing.set(labels, 0);
      return { requeueAfterMs: resyncMs };
    }

    const promotions = this.informers.promotion.list(ref.namespace).map(promotionView);
    if (promotionGuard(promotions, ref.name).kind === "inFlight") return { requeueAfterMs: resyncMs };
    const freights = this.informers.freight.list(ref.namespace).map(freightView);
    const freight = matchingFreight(freights, drifted, origins);
    if (!freight) {
      freightMissing.set(labels, 1);
      const wanted = drifted.map((d) => `${d.repository}:${d.tag ?? d.digest}`).join(", ");
      await this.events.record(
        app,
        "Warning",
        "FreightMissing",
        "Promote",
        `No Freight of Stage ${keyOf(ref)}'s Warehouses holds ${wanted}: it is promoted once a Warehouse discovers it.`,
      );
      return { requeueAfterMs: resyncMs };
    }
    freightMissing.set(labels, 0);
    if (promotionGuard(promotions, ref.name, freight.name).kind === "failedBefore")
      return { requeueAfterMs: resyncMs };

    const created = await this.promotions.create(promotionFor(ref, freight.name));
    await this.events.record(
      app,
      "Normal",
      "PromotionCreated",
      "Promote",
      `Promotion ${created.metadata?.name} moves Stage ${keyOf(ref)} to Freight ${freight.name}, which Argo CD already runs.`,
    );
    return { requeueAfterMs: resyncMs };
  }
}

export function setupKargoObserver(manager: Manager, mode: ObserveMode, identity: string): Controller {
  const kc = manager.kubeConfig;
  const informers = Object.fromEntries(
    Object.entries(observedTypes).map(([key, type]) => [
      key,
      manager.informer<KubernetesObject>(informerSource(kc, type)),
    ]),
  ) as Informers;
  const events = new EventRecorder(kc, identity, manager.logger, managedBy);
  const reconciler = new ObserverReconciler(
    informers,
    new ResourceClient(kc, observedTypes.promotion),
    events,
    mode,
  );
  const controller = new Controller("kargo-observer", reconciler, manager.logger);
  const enqueue = (app: KubernetesObject) => controller.queue.add(storeKeyOf(app));
  // Updates are reduced to annotation and image changes: Argo CD rewrites its status constantly.
  informers.application.addHandlers({
    added: enqueue,
    updated: (before, app) => {
      if (applicationFingerprint(before) !== applicationFingerprint(app)) enqueue(app);
    },
  });
  // A Stage, its Promotions and its namespace's Freight re-enqueue the Applications it manages.
  const applicationsOf = (stage: NamespacedName) =>
    informers.application.list().filter((app) => {
      const ref = observedStage(app, mode);
      return ref?.namespace === stage.namespace && ref.name === stage.name;
    });
  const byStage = (object: KubernetesObject) =>
    applicationsOf({
      namespace: object.metadata?.namespace ?? "",
      name: object.metadata?.name ?? "",
    }).forEach(enqueue);
  const byPromotion = (object: KubernetesObject) =>
    applicationsOf({
      namespace: object.metadata?.namespace ?? "",
      name: promotionView(object).stage,
    }).forEach(enqueue);
  const byNamespace = (object: KubernetesObject) =>
    informers.application
      .list()
      .filter((app) => observedStage(app, mode)?.namespace === object.metadata?.namespace)
      .forEach(enqueue);
  for (const [informer, map] of [
    [informers.stage, byStage],
    [informers.promotion, byPromotion],
    [informers.freight, byNamespace],
    [informers.warehouse, byNamespace],
  ] as const)
    informer.addHandlers({ added: map, updated: (_b, o) => map(o), deleted: map });
  manager.addController(controller);
  return controller;
}
