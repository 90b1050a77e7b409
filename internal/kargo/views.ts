// What the observer reads of Argo CD's and Kargo's objects, from their unstructured JSON: no
// typed client of either, so neither's API versions couple to us. Each reader takes only the
// fields kargo-argocd-observer.md names, and a missing field reads as nothing.
import type { KubernetesObject } from "@kubernetes/client-node";
import type { NamespacedName } from "../types/names.ts";
import type { FreightView } from "./drift.ts";
import type { PromotionView } from "./guard.ts";
import { normalizeRepository, type ImageRef } from "./images.ts";

export const authorizedStageAnnotation = "kargo.akuity.io/authorized-stage";
export const ignoreAnnotation = "kargo-observer.kutlak.cc/ignore";
export const observeAnnotation = "kargo-observer.kutlak.cc/observe";
export const managedByLabel = "app.kubernetes.io/managed-by";
export const managedBy = "kargo-argocd-observer";
export const stageLabel = "kargo-observer.kutlak.cc/stage";
export const freightLabel = "kargo-observer.kutlak.cc/freight";

/** --observe-mode: every authorized Application but the ignored, or only those opted in. */
export type ObserveMode = "all" | "opt-in";

type Json = Record<string, unknown>;
const object = (value: unknown): Json => (value && typeof value === "object" ? (value as Json) : {});
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const text = (value: unknown): string | undefined =>
  typeof value === "string" && value !== "" ? value : undefined;

/** The Stage an Application is observed for: its authorized-stage annotation, unless it opts out. */
export function observedStage(app: KubernetesObject, mode: ObserveMode): NamespacedName | undefined {
  const annotations = app.metadata?.annotations ?? {};
  if (annotations[ignoreAnnotation] === "true") return undefined;
  if (mode === "opt-in" && annotations[observeAnnotation] !== "true") return undefined;
  const match = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?):([a-z0-9]([-a-z0-9.]*[a-z0-9])?)$/.exec(
    annotations[authorizedStageAnnotation] ?? "",
  );
  return match ? { namespace: match[1]!, name: match[3]! } : undefined;
}

/** What an update of an Application is worth a reconcile for: its annotations and its images. */
export function applicationFingerprint(app: KubernetesObject): string {
  const images = list(object(object((app as Json).status).summary).images);
  return JSON.stringify([app.metadata?.annotations ?? {}, images]);
}

/** The images Argo CD reports deployed (status.summary.images). */
export const deployedImages = (app: KubernetesObject): string[] =>
  list(object(object((app as Json).status).summary).images).flatMap((i) => (text(i) ? [i as string] : []));

/** The Warehouses a Stage requests Freight from (spec.requestedFreight[].origin, kind Warehouse). */
export function requestedWarehouses(stage: KubernetesObject): Set<string> {
  const requested = list(object((stage as Json).spec).requestedFreight);
  return new Set(
    requested.flatMap((r) => {
      const origin = object(object(r).origin);
      const name = text(origin.name);
      return name && (origin.kind ?? "Warehouse") === "Warehouse" ? [name] : [];
    }),
  );
}

const imageOf = (value: unknown): ImageRef | undefined => {
  const image = object(value);
  const repository = text(image.repoURL);
  if (!repository) return undefined;
  const tag = text(image.tag);
  const digest = text(image.digest);
  return {
    repository: normalizeRepository(repository),
    ...(tag ? { tag } : {}),
    ...(digest ? { digest } : {}),
  };
};
const imagesOf = (value: unknown) => list(value).flatMap((i) => imageOf(i) ?? []);

/** The images of the Stage's current Freight: every item of status.freightHistory[0]. */
export function currentImages(stage: KubernetesObject): ImageRef[] {
  const current = object(list(object((stage as Json).status).freightHistory)[0]);
  return Object.values(object(current.items)).flatMap((item) => imagesOf(object(item).images));
}

/** A Freight's origin Warehouse and images (top-level fields of a Freight). */
export function freightView(freight: KubernetesObject): FreightView {
  const json = freight as Json;
  return {
    name: freight.metadata?.name ?? "",
    origin: text(object(json.origin).name) ?? "",
    images: imagesOf(json.images),
    createdAt: new Date(freight.metadata?.creationTimestamp ?? 0).getTime() || 0,
  };
}

/** A Promotion's Stage, Freight and phase. */
export function promotionView(promotion: KubernetesObject): PromotionView {
  const json = promotion as Json;
  const phase = text(object(json.status).phase);
  return {
    name: promotion.metadata?.name ?? "",
    stage: text(object(json.spec).stage) ?? "",
    freight: text(object(json.spec).freight) ?? "",
    ...(phase ? { phase } : {}),
    ours: promotion.metadata?.labels?.[managedByLabel] === managedBy,
  };
}

/** The Promotion that moves the Stage's bookkeeping to `freight`. */
export function promotionFor(stage: NamespacedName, freight: string): KubernetesObject & { spec: Json } {
  return {
    apiVersion: "kargo.akuity.io/v1alpha1",
    kind: "Promotion",
    metadata: {
      generateName: `${stage.name}-observer-`,
      namespace: stage.namespace,
      labels: { [managedByLabel]: managedBy, [stageLabel]: stage.name, [freightLabel]: freight },
    },
    spec: { stage: stage.name, freight },
  };
}

/** The Warehouse's subscriptions, as drift.ts's subscribedRepositories reads them. */
export const subscriptionsOf = (warehouse: KubernetesObject): { image?: { repoURL?: string } }[] =>
  list(object((warehouse as Json).spec).subscriptions) as { image?: { repoURL?: string } }[];
