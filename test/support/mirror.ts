// What a namespace needs to mirror into a repository, applied the way a user would: shared by
// the end-to-end tests, make demo and the benchmark.
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import {
  gitBranches,
  gitProviders,
  gitTargets,
  kubeProviders,
  watchRules,
  type GitProvider,
  type GitTarget,
  type WatchRule,
} from "../../generated/v1alpha3/index.ts";

export interface MirrorTarget {
  name: string;
  path: string;
  /** What its WatchRule selects in the namespace. */
  rules: WatchRule["spec"]["rules"];
  prune?: "OnEvent" | "Always" | "Never";
  /** The commit window's idle timeout; 1s by default, so tests do not wait long. */
  idleTimeout?: string;
  /** The commit window's maximum duration; 10s by default. */
  maxDuration?: string;
  /** spec.placement. */
  placement?: GitTarget["spec"]["placement"];
  /** spec.encryption.age.recipients. */
  recipients?: string[];
  /** spec.applierClaimRef. */
  applierClaimRef?: GitTarget["spec"]["applierClaimRef"];
}

/** The field manager the fixture applies as; a later apply of the same fields must use it too. */
export const mirrorFieldManager = "test";

/** The GitTarget the fixture applies for `t`, for re-applying it with other settings. */
export function mirrorGitTarget(namespace: string, t: MirrorTarget): GitTarget {
  return {
    apiVersion: "configbutler.ai/v1alpha3",
    kind: "GitTarget",
    metadata: { name: t.name, namespace },
    spec: {
      gitBranchRef: { name: "main" },
      kubeProviderRef: { name: "self" },
      path: t.path,
      commit: { window: { idleTimeout: t.idleTimeout ?? "1s", maxDuration: t.maxDuration ?? "10s" } },
      ...(t.prune ? { prune: { mode: t.prune } } : {}),
      ...(t.placement ? { placement: t.placement } : {}),
      ...(t.recipients ? { encryption: { age: { recipients: t.recipients } } } : {}),
      ...(t.applierClaimRef ? { applierClaimRef: t.applierClaimRef } : {}),
    },
  };
}

/** A WatchRule the fixture applies: `rules` selected for the GitTarget `target` of its namespace. */
export function mirrorWatchRule(
  namespace: string,
  name: string,
  target: string,
  rules: WatchRule["spec"]["rules"],
): WatchRule {
  return {
    apiVersion: "configbutler.ai/v1alpha3",
    kind: "WatchRule",
    metadata: { name, namespace },
    spec: { gitTargetRef: { name: target }, rules },
  };
}

/**
 * Applies what a namespace needs to mirror into a repository: the credential Secret, a
 * GitProvider "state" granting the branch (main unless named) to the namespace, the GitBranch
 * "main" holding it, an inCluster KubeProvider "self", and per target a GitTarget and a
 * WatchRule of the same name.
 */
export async function applyMirror(
  kc: KubeConfig,
  namespace: string,
  url: string,
  /** The credential Secret's keys: a username and password, and what else the remote needs. */
  user: Record<string, string>,
  targets: MirrorTarget[],
  branch = "main",
  parentBranch?: string,
): Promise<void> {
  const apiVersion = "configbutler.ai/v1alpha3" as const;
  const [providers, branches, gitTargetClient, rules] = [
    kubeProviders(kc),
    gitBranches(kc),
    gitTargets(kc),
    watchRules(kc),
  ];
  // Applied again over an earlier mirror of the namespace, the credential is already there.
  await kc
    .makeApiClient(CoreV1Api)
    .createNamespacedSecret({ namespace, body: { metadata: { name: "git" }, stringData: user } })
    .catch((err: unknown) => {
      if ((err as { code?: number }).code !== 409) throw err;
    });
  await gitProviders(kc).apply(
    {
      apiVersion,
      kind: "GitProvider",
      metadata: { name: "state", namespace },
      spec: {
        url,
        secretRef: { name: "git" },
        allowedGitBranches: [{ consumerNamespaces: { from: "Same" }, branches: [branch] }],
      },
    },
    mirrorFieldManager,
  );
  await branches.apply(
    {
      apiVersion,
      kind: "GitBranch",
      metadata: { name: "main", namespace },
      spec: { gitProviderRef: { name: "state" }, branch, ...(parentBranch ? { parentBranch } : {}) },
    },
    mirrorFieldManager,
  );
  await providers.apply(
    { apiVersion, kind: "KubeProvider", metadata: { name: "self", namespace }, spec: { inCluster: {} } },
    mirrorFieldManager,
  );
  for (const t of targets) {
    await gitTargetClient.apply(mirrorGitTarget(namespace, t), mirrorFieldManager);
    await rules.apply(mirrorWatchRule(namespace, t.name, t.name, t.rules), mirrorFieldManager);
  }
}

/**
 * Has the mirror's GitProvider "state" sign every commit with an ed25519 key the operator
 * generates into the Secret "signing", applied by a field manager of its own, so only
 * spec.commit.signing is its field.
 */
export async function applyGeneratedSigning(kc: KubeConfig, namespace: string): Promise<void> {
  await gitProviders(kc).apply(
    {
      apiVersion: "configbutler.ai/v1alpha3",
      kind: "GitProvider",
      metadata: { name: "state", namespace },
      spec: { commit: { signing: { secretRef: { name: "signing" }, generateWhenMissing: true } } },
    } as GitProvider,
    "signing",
  );
}

/** Re-applies the namespace's KubeProvider "self" granting its GitTargets every source namespace. */
export function grantAllSourceNamespaces(kc: KubeConfig, namespace: string) {
  return kubeProviders(kc).apply(
    {
      apiVersion: "configbutler.ai/v1alpha3",
      kind: "KubeProvider",
      metadata: { name: "self", namespace },
      spec: {
        inCluster: {},
        allowedGitTargets: [{ consumerNamespaces: { from: "Same" }, sourceNamespaces: { from: "All" } }],
      },
    },
    mirrorFieldManager,
  );
}
