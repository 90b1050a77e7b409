// Which applier applied a live object, read from the raw object before sanitize strips the marks
// (applier-claims.md, "Another applier's objects"): Flux's owner labels name the Kustomization,
// else Argo CD's tracking annotation names the Application. A folder a claim applies belongs to
// that claim's applier; an object another applier applies, mirrored into it, would be applied
// by both, and two appliers applying one object fight each other.
import type { KubernetesObject } from "@kubernetes/client-node";

export interface AppliedBy {
  kind: "Kustomization" | "Application";
  /** Undefined for an Application in Argo CD's own namespace, which its tracking id leaves out. */
  namespace?: string;
  name: string;
}

const fluxName = "kustomize.toolkit.fluxcd.io/name";
const fluxNamespace = "kustomize.toolkit.fluxcd.io/namespace";
const argoTracking = "argocd.argoproj.io/tracking-id";

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

/** Whether `owner` is `applier` itself; an Application named without a namespace matches by name. */
export function isApplier(owner: AppliedBy, applier: Required<AppliedBy>): boolean {
  return (
    owner.kind === applier.kind &&
    owner.name === applier.name &&
    (owner.namespace === undefined || owner.namespace === applier.namespace)
  );
}
