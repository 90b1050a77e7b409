// (h) A FluxClaim in place, with the real Flux controllers (when `make flux` built them): a
// namespace of ConfigMaps mirrored into a folder that a Kustomization applies, held by a claim.
// Measured: from a push notice of a commit pushed by hand to the Kustomization Ready at that
// revision (the worker's fetch, the source's fetch, the resume, Flux's apply, the suspend after
// it), and from a live edit to the push that carries it (nothing to apply: the cluster runs it).
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { fluxClaims } from "../generated/v1alpha3/index.ts";
import { kustomizationType, type Kustomization } from "../internal/applier/flux/view.ts";
import { ResourceClient } from "../internal/kube/resourceclient.ts";
import type { ControlPlane } from "../test/support/controlplane.ts";
import { fluxClaim, fluxSource, kustomization, startFlux } from "../test/support/flux.ts";
import type { GitServer } from "../test/support/gitserver.ts";
import { applyMirror } from "../test/support/mirror.ts";
import { startOperator } from "../test/support/operator.ts";
import { eventually } from "../test/support/wait.ts";
import { configMapFolder, configMapName, fillNamespace, targetPath } from "./cluster.ts";
import { progress } from "./sampler.ts";

export interface ClaimResult {
  objects: number;
  /** ms from the push notice to the Kustomization Ready at the pushed revision, per round. */
  pushToApplied: number[];
  /** ms from a live edit to the push that carries it, per round. */
  editToCommit: number[];
  operatorErrors: string[];
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
};

export function claimSummary(r: ClaimResult): string {
  const show = (values: number[]) =>
    `p50 ${percentile(values, 50)} ms, max ${Math.max(...values)} ms (${values.length} rounds)`;
  return [
    `(h) FluxClaim, ${r.objects} ConfigMaps in the applied folder:`,
    `    push notice → Kustomization Ready at the pushed revision: ${show(r.pushToApplied)}`,
    `    live edit → its push, with the claim in place (idleTimeout 0s): ${show(r.editToCommit)}`,
  ].join("\n");
}

export async function measureClaim(
  plane: ControlPlane,
  kc: KubeConfig,
  git: GitServer,
  user: { username: string; password: string },
  workerRoot: string,
  options: { objects: number; rounds: number; batch: number },
): Promise<ClaimResult> {
  const namespace = "bench-claim";
  progress(`(h) a FluxClaim with the real Flux controllers, ${options.objects} ConfigMaps`);
  await fillNamespace(kc, namespace, options.objects, options.batch);
  const url = await git.createRepository("bench-claim");
  await git.pushForeignCommit("bench-claim", { files: { "README.md": "# Claim\n" }, message: "Start" });
  const flux = await startFlux(plane);
  const core = kc.makeApiClient(CoreV1Api);
  const env = { kc, core, url };
  const operator = startOperator(kc, {
    inClusterKubeProviders: [`${namespace}/self`],
    workerRoot,
    pushCooldownMs: 0,
  });
  const result: ClaimResult = {
    objects: options.objects,
    pushToApplied: [],
    editToCommit: [],
    operatorErrors: [],
  };
  try {
    await applyMirror(kc, namespace, url, user, [
      {
        name: "bench",
        path: targetPath,
        rules: [{ apiGroups: [""], resources: ["configmaps"] }],
        idleTimeout: "0s",
        applierClaimRef: { kind: "FluxClaim", name: "bench" },
      },
    ]);
    const folder = configMapFolder(namespace);
    await eventually(
      async () => (await git.listFiles("bench-claim", "main", folder)).length >= options.objects,
      {
        timeoutMs: 240_000,
        description: "the snapshot in Git",
      },
    );
    await fluxSource(env, namespace, user);
    const kustomizations = new ResourceClient<Kustomization>(kc, kustomizationType);
    await kustomizations.apply(kustomization(namespace, "bench", `./${folder}`), "kubectl");
    await fluxClaims(kc).apply(fluxClaim(namespace, "bench"), "bench");
    const applied = async (commit: string) => {
      const k = await kustomizations.get(namespace, "bench");
      const ready = k?.status?.conditions?.find((c) => c.type === "Ready");
      return ready?.status === "True" && k?.status?.lastAppliedRevision?.endsWith(commit);
    };
    const tip = async () => (await git.branchHead("bench-claim", "main"))!;
    await eventually(async () => applied(await tip()), {
      timeoutMs: 240_000,
      description: "the converge at start",
    });
    const file = `${folder}/${configMapName(0)}.yaml`;
    for (let round = 0; round < options.rounds; round++) {
      const text = (await git.fileAt("bench-claim", "main", file))!;
      const edited = text.replace(/alpha: .*/, `alpha: pushed-${round}`);
      const commit = await git.pushForeignCommit("bench-claim", {
        files: { [file]: edited },
        message: `round ${round}`,
      });
      const noticed = Date.now();
      operator.workers.notice(`${namespace}/main`);
      await eventually(() => applied(commit), {
        timeoutMs: 120_000,
        intervalMs: 20,
        description: `round ${round} applied`,
      });
      result.pushToApplied.push(Date.now() - noticed);
      const value = `live-${round}`;
      const edit = Date.now();
      await core.patchNamespacedConfigMap({
        namespace,
        name: configMapName(1),
        body: [{ op: "replace", path: "/data/alpha", value }],
      });
      await eventually(
        async () =>
          (await git.fileAt("bench-claim", "main", `${folder}/${configMapName(1)}.yaml`))?.includes(
            `alpha: ${value}`,
          ),
        { timeoutMs: 60_000, intervalMs: 20, description: `round ${round}'s edit in Git` },
      );
      result.editToCommit.push(Date.now() - edit);
    }
  } finally {
    result.operatorErrors = operator.errors.slice(0, 20);
    await operator.stop();
    await flux.stop();
  }
  return result;
}
