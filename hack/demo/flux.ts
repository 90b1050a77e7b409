// The demo's FluxClaim step, when the Flux controllers are built (make flux): Flux applies the
// demo's ConfigMaps folder from the repository the operator writes, and the GitTarget names a
// FluxClaim that holds that Kustomization suspended, so it applies only when asked.
import { EventsV1Api } from "@kubernetes/client-node";
import { fluxClaims, gitTargets } from "../../generated/v1alpha3/index.ts";
import { kustomizationType, type Kustomization } from "../../internal/applier/flux/view.ts";
import { ResourceClient } from "../../internal/kube/resourceclient.ts";
import type { ControlPlane } from "../../test/support/controlplane.ts";
import { fluxBinary, fluxSource, kustomization, startFlux, type Flux } from "../../test/support/flux.ts";
import { mirrorFieldManager, mirrorGitTarget, type MirrorTarget } from "../../test/support/mirror.ts";
import type { MirrorEnvironment } from "../../test/support/mirrorenv.ts";
import { eventually } from "../../test/support/wait.ts";

/** Whether `make flux` has built both controllers. */
export function fluxBuilt(): boolean {
  try {
    fluxBinary("source-controller");
    fluxBinary("kustomize-controller");
    return true;
  } catch {
    return false;
  }
}

/** Starts Flux, has it apply the folder, names a FluxClaim from `target`, and prints the hold. */
export async function demoFluxClaim(
  plane: ControlPlane,
  env: Pick<MirrorEnvironment, "kc" | "core" | "url">,
  namespace: string,
  target: MirrorTarget,
  user: { username: string; password: string },
  print: (line: string) => void,
): Promise<Flux> {
  const flux = await startFlux(plane);
  const { kc } = env;
  // The source and its credential live in flux-system, as Flux installs them, so the mirrored
  // namespace holds only the Kustomization.
  await env.core.createNamespace({ body: { metadata: { name: "flux-system" } } });
  await fluxSource(env, "flux-system", user);
  const kustomizations = new ResourceClient<Kustomization>(kc, kustomizationType);
  const path = `./${target.path}/${namespace}/configmaps`;
  await kustomizations.apply(kustomization(namespace, "demo", path, "flux-system"), "kubectl");
  await eventually(async () => (await kustomizations.get(namespace, "demo"))?.status?.lastAppliedRevision, {
    timeoutMs: 60_000,
    description: "Flux to apply the folder once",
  });
  await fluxClaims(kc).apply(
    {
      apiVersion: "configbutler.ai/v1alpha3",
      kind: "FluxClaim",
      metadata: { name: "demo", namespace },
      spec: { kubeProviderRef: { name: "self" }, kustomizationRef: { name: "demo" } },
    },
    "demo",
  );
  await gitTargets(kc).apply(
    mirrorGitTarget(namespace, { ...target, applierClaimRef: { kind: "FluxClaim", name: "demo" } }),
    mirrorFieldManager,
  );
  const claim = await eventually(
    async () => {
      const c = await fluxClaims(kc).get(namespace, "demo");
      return (
        c?.status?.conditions?.some(
          (x) => x.type === "Ready" && x.status === "True" && x.reason === "Suspended",
        ) && c
      );
    },
    { timeoutMs: 60_000, description: "the FluxClaim to hold its Kustomization" },
  );
  const reason = (type: string) => claim.status?.conditions?.find((c) => c.type === type);
  const held = await kustomizations.get(namespace, "demo");
  print(
    `    FluxClaim demo: Configured ${reason("Configured")?.reason}, InControl ${reason("InControl")?.reason}, Ready ${reason("Ready")?.status}`,
  );
  print(
    `    Kustomization demo: spec.suspend ${held?.spec?.suspend}, requestedAt handled ${held?.status?.lastHandledReconcileAt === held?.metadata?.annotations?.["reconcile.fluxcd.io/requestedAt"]}`,
  );
  print(
    `    source ${claim.status?.source?.url} branch ${claim.status?.source?.branch} at ${claim.status?.source?.revision}`,
  );
  const events = await kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace });
  const adopted = events.items.find((e) => e.regarding?.kind === "FluxClaim" && e.reason === "Adopted");
  print(`    Event ${adopted?.reason}: ${adopted?.note}`);
  const ready = await eventually(
    async () =>
      (await gitTargets(kc).get(namespace, target.name))?.status?.conditions?.find(
        (c) => c.type === "ApplierClaimReady" && c.status === "True",
      ),
    { timeoutMs: 30_000, description: "the GitTarget's ApplierClaimReady" },
  );
  print(`    GitTarget ${target.name}: ApplierClaimReady ${ready.status}: ${ready.message}`);
  return flux;
}
