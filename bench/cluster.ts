// What the benchmark puts in the cluster: namespaces of small ConfigMaps, and per namespace the
// objects that mirror them, through the same fixture the end-to-end tests and make demo use.
import { CoreV1Api, type KubeConfig, type V1ConfigMap } from "@kubernetes/client-node";
import { gitTargets, watchRules } from "../generated/v1alpha3/index.ts";
import { bootstrapFiles } from "../internal/manifest/bootstrap.ts";
import { builtInPath } from "../internal/manifest/placement/builtin.ts";
import { sanitize } from "../internal/sanitize/sanitize.ts";
import { toStableYaml } from "../internal/sanitize/stableyaml.ts";
import {
  applyMirror as applyMirrorFixture,
  grantAllSourceNamespaces,
  mirrorFieldManager,
  mirrorGitTarget,
  mirrorWatchRule,
  type MirrorTarget,
} from "../test/support/mirror.ts";
import { progress } from "./sampler.ts";

/** The three keys of every ConfigMap; the edits replace their values. */
export const dataKeys = ["alpha", "beta", "gamma"] as const;

export const configMapName = (i: number) => `config-${String(i).padStart(5, "0")}`;

export function configMapData(i: number): Record<string, string> {
  return Object.fromEntries(dataKeys.map((key) => [key, `${key}-${i}`]));
}

/** The folder a GitTarget in `namespace` writes to, and where its ConfigMaps' documents go. */
export const targetPath = "clusters/bench";
export const configMapFolder = (namespace: string) =>
  builtInPath(targetPath, { group: "", resource: "configmaps", namespace, name: "x" }, false).replace(
    /\/x\.yaml$/,
    "",
  );

/** Creates the namespace and `count` ConfigMaps, `batch` requests at a time; returns the time taken. */
export async function fillNamespace(
  kc: KubeConfig,
  namespace: string,
  count: number,
  batch: number,
): Promise<number> {
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  const started = Date.now();
  let lastReport = started;
  for (let first = 0; first < count; first += batch) {
    const indexes = Array.from({ length: Math.min(batch, count - first) }, (_, k) => first + k);
    await Promise.all(
      indexes.map((i) =>
        core.createNamespacedConfigMap({
          namespace,
          body: { metadata: { name: configMapName(i) }, data: configMapData(i) },
        }),
      ),
    );
    if (Date.now() - lastReport > 5_000) {
      lastReport = Date.now();
      progress(`  created ${first + indexes.length}/${count} ConfigMaps`);
    }
  }
  return Date.now() - started;
}

export interface Window {
  idleTimeout: string;
  maxDuration: string;
}

const mirrored = (window: Window): MirrorTarget => ({
  name: "configs",
  path: targetPath,
  rules: [{ apiGroups: [""], resources: ["configmaps"] }],
  ...window,
});

/**
 * Applies what mirrors the namespace's ConfigMaps into the repository at `url`: its GitBranch
 * "main" writes the repository branch `branch` (main unless told).
 */
export async function applyMirror(
  kc: KubeConfig,
  namespace: string,
  url: string,
  user: { username: string; password: string },
  window: Window,
  branch = "main",
): Promise<void> {
  await applyMirrorFixture(kc, namespace, url, user, [mirrored(window)], branch);
}

/** The most rules one WatchRule holds (its schema's maxItems). */
const rulesPerWatchRule = 64;

/**
 * Applies what mirrors the ConfigMaps of every namespace of `sources` into one GitTarget in
 * `namespace`, as a cluster's namespaces are mirrored: one rule per source namespace (its
 * `sourceNamespace`), 64 to a WatchRule, each namespace's documents in a folder of its own under
 * the target's path, and the KubeProvider granting the target every source namespace.
 */
export async function applySpreadMirror(
  kc: KubeConfig,
  namespace: string,
  sources: readonly string[],
  url: string,
  user: { username: string; password: string },
  window: Window,
): Promise<void> {
  const rules = sources.map((sourceNamespace) => ({
    apiGroups: [""],
    resources: ["configmaps"],
    sourceNamespace,
  }));
  await applyMirrorFixture(kc, namespace, url, user, [
    { ...mirrored(window), rules: rules.slice(0, rulesPerWatchRule) },
  ]);
  // After the fixture, whose KubeProvider grants nothing: one field manager applies both.
  await grantAllSourceNamespaces(kc, namespace);
  for (let first = rulesPerWatchRule; first < rules.length; first += rulesPerWatchRule) {
    const name = `configs-${first / rulesPerWatchRule}`;
    const slice = rules.slice(first, first + rulesPerWatchRule);
    await watchRules(kc).apply(mirrorWatchRule(namespace, name, "configs", slice), mirrorFieldManager);
  }
}

/** Changes the GitTarget's commit window; returns the generation the operator must observe. */
export async function setWindow(kc: KubeConfig, namespace: string, window: Window): Promise<number> {
  const applied = await gitTargets(kc).apply(
    mirrorGitTarget(namespace, mirrored(window)),
    mirrorFieldManager,
  );
  return applied.metadata.generation ?? 0;
}

/**
 * The files the operator should write for the namespace's ConfigMaps: each rendered through the
 * operator's own sanitize and stable YAML at its built-in path, added to `files` (the bootstrap
 * files, unless another namespace's were rendered into it). The native-git reference writes
 * exactly these.
 */
export async function renderFolder(
  kc: KubeConfig,
  namespace: string,
  files = new Map<string, string>(bootstrapFiles(targetPath)),
): Promise<Map<string, string>> {
  const list = await kc.makeApiClient(CoreV1Api).listNamespacedConfigMap({ namespace });
  for (const item of list.items) {
    const name = item.metadata?.name ?? "";
    // A listed item carries no apiVersion or kind, and client-node's model holds Dates: the
    // operator sees the object as JSON from its watch, so render it from that form.
    const object = JSON.parse(
      JSON.stringify({ ...item, apiVersion: "v1", kind: "ConfigMap" }),
    ) as V1ConfigMap & {
      apiVersion: string;
      kind: string;
    };
    files.set(
      builtInPath(targetPath, { group: "", resource: "configmaps", namespace, name }, false),
      toStableYaml(sanitize(object)),
    );
  }
  return files;
}

/** Whether the namespace's GitTarget is Ready, and the generation it last observed. */
export async function targetReady(
  kc: KubeConfig,
  namespace: string,
): Promise<{ ready: boolean; generation: number }> {
  const target = await gitTargets(kc).get(namespace, "configs");
  return {
    ready: target?.status?.conditions?.find((c) => c.type === "Ready")?.status === "True",
    generation: target?.status?.observedGeneration ?? 0,
  };
}

/**
 * Removes the namespace's GitTarget and WatchRule, so the operator started for the next size
 * does not mirror this one too.
 */
export async function retireMirror(kc: KubeConfig, namespace: string): Promise<void> {
  await watchRules(kc).delete(namespace, "configs");
  await gitTargets(kc).delete(namespace, "configs");
}
