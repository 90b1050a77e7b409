import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  ApiextensionsV1Api,
  KubernetesObjectApi,
  PatchStrategy,
  loadAllYaml,
  type KubeConfig,
  type KubernetesObject,
} from "@kubernetes/client-node";
import { repoRoot } from "./binaries.ts";
import { eventually } from "./wait.ts";

/**
 * Every document of a multi-document YAML file, as client-node's typed models. That matters:
 * KubernetesObjectApi serializes a built-in kind through its model, which silently drops keys
 * spelled the JSON way where the model spells them otherwise (a CRD schema's `default`, `enum`
 * and `x-kubernetes-validations`), so plain parsed YAML must not be passed to it.
 */
export async function loadManifests(path: string): Promise<KubernetesObject[]> {
  return loadAllYaml(await readFile(path, "utf8")) as KubernetesObject[];
}

/** Server-side applies each object as the test field manager, in order. */
export async function applyManifests(
  kubeConfig: KubeConfig,
  objects: KubernetesObject[],
): Promise<KubernetesObject[]> {
  const client = KubernetesObjectApi.makeApiClient(kubeConfig);
  const applied: KubernetesObject[] = [];
  for (const object of objects) {
    applied.push(
      await client.patch(object, undefined, undefined, "testenv", true, PatchStrategy.ServerSideApply),
    );
  }
  return applied;
}

/** Installs this repository's CRDs (config/crd/bases) and waits until each is Established. */
export async function installCrds(kubeConfig: KubeConfig): Promise<string[]> {
  const dir = join(repoRoot, "config/crd/bases");
  const files = (await readdir(dir)).filter((f) => f.endsWith(".yaml")).sort();
  return installCrdFiles(
    kubeConfig,
    files.map((f) => join(dir, f)),
  );
}

/** Installs the CRDs the files hold and waits until each is Established. */
export async function installCrdFiles(kubeConfig: KubeConfig, paths: string[]): Promise<string[]> {
  const crds = (await Promise.all(paths.map((path) => loadManifests(path)))).flat();
  await applyManifests(kubeConfig, crds);
  const api = kubeConfig.makeApiClient(ApiextensionsV1Api);
  const names = crds.map((crd) => crd.metadata!.name!);
  for (const name of names) {
    await eventually(
      async () => {
        const crd = await api.readCustomResourceDefinition({ name });
        return crd.status?.conditions?.some((c) => c.type === "Established" && c.status === "True");
      },
      { timeoutMs: 30_000, description: `CRD ${name} to be Established` },
    );
  }
  return names;
}
