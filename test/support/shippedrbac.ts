// The operator's identity as a user installs it: the ServiceAccount gitops-reverser-system/
// gitops-reverser bound to the roles in config/rbac (which test/e2e/packaging/deploy.test.ts pins
// against the chart), with the watched role widened for what a suite mirrors, as docs/rbac.md
// tells a user to widen it. A suite whose operator runs under it finds every verb the code uses
// and the install does not grant, as a Forbidden, where an operator running as admin never would.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import {
  CoreV1Api,
  type KubeConfig,
  type KubernetesObject,
  type V1PolicyRule,
} from "@kubernetes/client-node";
import { repoRoot } from "./binaries.ts";
import type { ControlPlane } from "./controlplane.ts";
import { keepConnections } from "../../internal/kube/connections.ts";
import { applyManifests, loadManifests } from "./manifests.ts";

/** Where config/rbac installs the operator's ServiceAccount and its leader-election Role. */
export const operatorNamespace = "gitops-reverser-system";
const operatorAccount = "gitops-reverser";

/** What a suite's operator reads of what it mirrors: every kind, by default (get, list, watch only). */
export const watchEverything: V1PolicyRule[] = [
  { apiGroups: ["*"], resources: ["*"], verbs: ["get", "list", "watch"] },
];

/**
 * Installs config/rbac and returns the operator's ServiceAccount: a KubeConfig for an operator in
 * the test's process, and a kubeconfig file for one in a process of its own. `watched` is the
 * ClusterRole a user labels to aggregate into gitops-reverser-watched; no controller-manager runs
 * here to aggregate it, so each role that would be aggregated is bound on its own instead, which
 * grants the same.
 */
export async function shippedOperatorIdentity(
  plane: ControlPlane,
  admin: KubeConfig,
  watched: V1PolicyRule[] = watchEverything,
): Promise<{ kubeConfig: KubeConfig; kubeconfigPath: string }> {
  const core = admin.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: operatorNamespace } } }).catch((err: unknown) => {
    if ((err as { code?: number }).code !== 409) throw err;
  });
  const rbac = join(repoRoot, "config/rbac");
  const shipped: KubernetesObject[] = [];
  for (const file of readdirSync(rbac).filter((f) => f.endsWith(".yaml") && f !== "kustomization.yaml"))
    shipped.push(...(await loadManifests(join(rbac, file))));
  const suiteWatched = {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: {
      name: "gitops-reverser-watched-by-this-suite",
      labels: { "configbutler.ai/aggregate-to-gitops-reverser": "true" },
    },
    rules: watched,
  };
  const aggregated = [...shipped, suiteWatched].filter(
    (o) =>
      o.kind === "ClusterRole" &&
      o.metadata?.labels?.["configbutler.ai/aggregate-to-gitops-reverser"] === "true",
  );
  const bindings = aggregated.map((role) => ({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name: `${role.metadata!.name!}-aggregated` },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role.metadata!.name! },
    subjects: [{ kind: "ServiceAccount", name: operatorAccount, namespace: operatorNamespace }],
  }));
  await applyManifests(admin, [...shipped, suiteWatched, ...bindings] as KubernetesObject[]);
  const identity = await plane.serviceAccountToken(operatorNamespace, operatorAccount, 24 * 3600);
  return { kubeConfig: keepConnections(identity.kubeConfig), kubeconfigPath: identity.kubeconfigPath };
}
