// What a Flux user has in place before a GitTarget names a claim: a GitRepository fetching the
// test repository's main branch with the mirror's credential, and Kustomizations applying its
// folders. Applied as their authors would, with no spec.suspend.
import assert from "node:assert/strict";
import {
  gitRepositoryType,
  type GitRepository,
  type Kustomization,
} from "../../../internal/applier/flux/view.ts";
import { ResourceClient } from "../../../internal/kube/resourceclient.ts";
import type { ControlPlane } from "../../support/controlplane.ts";
import { kubectl } from "../../support/kubectl.ts";
import type { MirrorEnvironment } from "../../support/mirrorenv.ts";

/** The Secret and GitRepository "state" that fetch the environment's repository, branch main. */
export async function fluxSource(
  env: MirrorEnvironment,
  namespace: string,
  user: { username: string; password: string },
): Promise<void> {
  await env.core.createNamespacedSecret({
    namespace,
    body: {
      metadata: { name: "flux-git" },
      stringData: { username: user.username, password: user.password },
    },
  });
  await new ResourceClient<GitRepository>(env.kc, gitRepositoryType).apply(
    {
      metadata: { name: "state", namespace },
      spec: { url: env.url, ref: { branch: "main" }, interval: "1m", secretRef: { name: "flux-git" } },
    } as GitRepository,
    "kubectl",
  );
}

/** A Kustomization applying `path` of the GitRepository "state", pruning, with no spec.suspend. */
export function kustomization(namespace: string, name: string, path: string): Kustomization {
  return {
    metadata: { name, namespace },
    spec: { path, prune: true, interval: "10m", sourceRef: { kind: "GitRepository", name: "state" } },
  } as Kustomization;
}

/** Runs kubectl as the plane's admin, and fails the test if it fails. */
export async function kubectlOk(plane: ControlPlane, ...args: string[]): Promise<string> {
  const result = await kubectl(plane, ...args);
  assert.equal(result.code, 0, result.stderr);
  return result.stdout;
}
