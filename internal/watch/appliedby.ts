// The watch side stamps which applier applied an object on its live events and snapshot
// entries, read from the raw object, because sanitize strips the marks that say it
// (applier-claims.md, "Another applier's objects"): Flux's owner labels name the Kustomization,
// else Argo CD's tracking annotation names the Application. The branch worker keeps another
// applier's objects out of a folder a claim applies (git/folder/coordinated.ts). A live item
// carries its event's resourceVersion too, which sanitize strips from the object.
import type { KubernetesObject } from "@kubernetes/client-node";
import type { StreamItem } from "../stream/stream.ts";
import type { AppliedBy, FieldsEntry } from "../types/applied.ts";
import { fieldPathsOf, type Writer } from "./lastwriter.ts";

const fluxName = "kustomize.toolkit.fluxcd.io/name";
const fluxNamespace = "kustomize.toolkit.fluxcd.io/namespace";
const argoTracking = "argocd.argoproj.io/tracking-id";

/** The applier whose marks `object` carries, if any. */
export function appliedBy(object: KubernetesObject): AppliedBy | undefined {
  const labels = object.metadata?.labels ?? {};
  const name = labels[fluxName];
  if (name) return { kind: "Kustomization", namespace: labels[fluxNamespace] ?? "", name };
  // <app>:<group>/<kind>:<namespace>/<name>, where <app> is <namespace>_<name> for an
  // Application outside Argo CD's own namespace.
  const app = object.metadata?.annotations?.[argoTracking]?.split(":")[0];
  if (!app) return undefined;
  const underscore = app.indexOf("_");
  return underscore < 0
    ? { kind: "Application", name: app }
    : { kind: "Application", namespace: app.slice(0, underscore), name: app.slice(underscore + 1) };
}

/** `{ appliedBy }` when an applier marked the object, else nothing: for spreading into an item. */
export function appliedByOf(object: KubernetesObject): { appliedBy?: AppliedBy } {
  const owner = appliedBy(object);
  return owner ? { appliedBy: owner } : {};
}

/**
 * A delete item, stamped with what the raw object says of it and sanitize strips: who applied
 * the object it removes, and the event's resourceVersion.
 */
export function stampDelete(
  item: StreamItem | Promise<StreamItem>,
  object: KubernetesObject,
): StreamItem | Promise<StreamItem> {
  const stamp = { ...appliedByOf(object), ...eventVersion(object) };
  if (!stamp.appliedBy && !stamp.resourceVersion) return item;
  const stamped = (i: StreamItem): StreamItem => (i.type === "delete" ? { ...i, ...stamp } : i);
  return item instanceof Promise ? item.then(stamped) : stamped(item);
}

/**
 * `{ resourceVersion }` of the event a live item comes from: a watch resumed from a cursor
 * delivers an event again, which the durable queue's replay tells apart by it.
 */
export function eventVersion(object: KubernetesObject): { resourceVersion?: string } {
  const version = object.metadata?.resourceVersion;
  return version ? { resourceVersion: version } : {};
}

/**
 * Who wrote a live object, and when, from its managedFields (sanitize strips them): what the
 * apply window judges a write by, with the writer where the watch's order proved it. Where it
 * did not, each entry carries its field paths, for the Warning a tie's mirror gives. Only for a
 * live upsert; a snapshot is no write.
 */
export function writersOf(
  object: KubernetesObject,
  writer: Writer,
): { writers?: FieldsEntry[]; writer?: string } {
  const entries = object.metadata?.managedFields;
  if (!entries?.length) return {};
  return {
    writers: entries.map((e) => ({
      ...(e.manager ? { manager: e.manager } : {}),
      ...(e.time ? { time: new Date(e.time).toISOString() } : {}),
      ...(e.subresource ? { subresource: e.subresource } : {}),
      ...("unknown" in writer && e.subresource !== "status" ? { fields: fieldPathsOf(e.fieldsV1) } : {}),
    })),
    ...("known" in writer ? { writer: writer.known } : {}),
  };
}
