// Small builders and waits shared by the controller tests.
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import {
  gitBranches,
  gitProviders,
  gitTargets,
  kubeProviders,
  watchRules,
} from "../../../generated/v1alpha3/index.ts";
import type { ResourceClient } from "../../../internal/kube/resourceclient.ts";
import { eventually } from "../../support/wait.ts";

type WithConditions = {
  status?: { conditions?: { type: string; status: string; reason: string; message: string }[] };
};

/** Waits until the object's condition has the status (and reason, if given), and returns the object. */
export async function conditionOf<T extends WithConditions>(
  client: ResourceClient<T & { metadata: { name?: string } } & { apiVersion: string; kind: string }>,
  namespace: string | undefined,
  name: string,
  type: string,
  status: string,
  reason?: string,
  timeoutMs = 30_000,
): Promise<T> {
  let last = "";
  return eventually(
    async () => {
      const object = await client.get(namespace, name);
      const condition = object?.status?.conditions?.find((c) => c.type === type);
      last = JSON.stringify(condition);
      return condition?.status === status && (reason === undefined || condition.reason === reason) && object;
    },
    { timeoutMs, description: `${name} ${type}=${status}${reason ? ` (${reason})` : ""}; last seen ${last}` },
  );
}

export function clients(kc: KubeConfig) {
  return {
    providers: kubeProviders(kc),
    targets: gitTargets(kc),
    branches: gitBranches(kc),
    rules: watchRules(kc),
  };
}

export interface MirrorTarget {
  name: string;
  path: string;
  resources: string[];
  prune?: "OnEvent" | "Always" | "Never";
}

/**
 * Applies what a namespace needs to mirror into a repository: the credential Secret, a
 * GitProvider granting branch main to the namespace, the GitBranch, an inCluster KubeProvider
 * named "self", and per target a GitTarget (1 s idle window) with a WatchRule selecting core
 * `resources` in the namespace.
 */
export async function applyMirror(
  kc: KubeConfig,
  namespace: string,
  url: string,
  user: { username: string; password: string },
  targets: MirrorTarget[],
): Promise<void> {
  const apiVersion = "configbutler.ai/v1alpha3" as const;
  const { providers, branches, targets: gitTargetClient, rules } = clients(kc);
  await kc
    .makeApiClient(CoreV1Api)
    .createNamespacedSecret({ namespace, body: { metadata: { name: "git" }, stringData: user } });
  await gitProviders(kc).apply(
    {
      apiVersion,
      kind: "GitProvider",
      metadata: { name: "state", namespace },
      spec: {
        url,
        secretRef: { name: "git" },
        allowedGitBranches: [{ consumerNamespaces: { from: "Same" }, branches: ["main"] }],
      },
    },
    "test",
  );
  await branches.apply(
    {
      apiVersion,
      kind: "GitBranch",
      metadata: { name: "main", namespace },
      spec: { gitProviderRef: { name: "state" }, branch: "main" },
    },
    "test",
  );
  await providers.apply(
    { apiVersion, kind: "KubeProvider", metadata: { name: "self", namespace }, spec: { inCluster: {} } },
    "test",
  );
  for (const t of targets) {
    await gitTargetClient.apply(
      {
        apiVersion,
        kind: "GitTarget",
        metadata: { name: t.name, namespace },
        spec: {
          gitBranchRef: { name: "main" },
          kubeProviderRef: { name: "self" },
          path: t.path,
          commit: { window: { idleTimeout: "1s", maxDuration: "10s" } },
          ...(t.prune ? { prune: { mode: t.prune } } : {}),
        },
      },
      "test",
    );
    await rules.apply(
      {
        apiVersion,
        kind: "WatchRule",
        metadata: { name: t.name, namespace },
        spec: { gitTargetRef: { name: t.name }, rules: [{ apiGroups: [""], resources: t.resources }] },
      },
      "test",
    );
  }
}
