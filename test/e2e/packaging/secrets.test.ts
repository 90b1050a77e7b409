// Least privilege for Secrets, as a user installs it: the chart rendered with secretNamespaces
// grants Secrets in the namespaces named only (a Role each, no cluster-wide rule), and the
// operator, running as the chart's ServiceAccount, reads only the Secrets its objects name. The
// API server's audit log of every Secret request is the witness: it sees each read the operator
// makes, including those RBAC refused.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, type KubeConfig, type KubernetesObject } from "@kubernetes/client-node";
import { gitProviders } from "../../../generated/v1alpha3/index.ts";
import { findCondition } from "../../../internal/operator/conditions.ts";
import { AuditSink } from "../../support/auditsink.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { GitServer } from "../../support/gitserver.ts";
import { helmTemplate } from "../../support/helm.ts";
import { applyManifests, installCrds } from "../../support/manifests.ts";
import { applyMirror } from "../../support/mirror.ts";
import { startOwnedOperator } from "../../support/operator.ts";
import { operatorNamespace } from "../../support/shippedrbac.ts";
import { eventually } from "../../support/wait.ts";

const user = { username: "gitops", password: "s3cret" };
const granted = "team-granted";
const elsewhere = "team-elsewhere";
const account = `system:serviceaccount:${operatorNamespace}:gitops-reverser`;

/** Every request on Secrets, at Metadata level: who, which verb, which Secret, and the answer. */
const secretPolicy = {
  apiVersion: "audit.k8s.io/v1",
  kind: "Policy",
  omitStages: ["RequestReceived", "ResponseStarted", "Panic"],
  rules: [{ level: "Metadata", resources: [{ group: "", resources: ["secrets"] }] }, { level: "None" }],
};

describe("the chart's secretNamespaces: the operator reads the Secrets its objects name, there only", () => {
  let sink: AuditSink;
  let plane: ControlPlane;
  let kc: KubeConfig;
  let git: GitServer;
  let operator: ReturnType<typeof startOwnedOperator>;

  before(async () => {
    sink = await AuditSink.start();
    [plane, git] = await Promise.all([
      ControlPlane.start({ audit: { url: sink.url(), policy: secretPolicy } }),
      GitServer.start({ users: [user] }),
    ]);
    kc = plane.kubeConfig();
    await installCrds(kc);
    const core = kc.makeApiClient(CoreV1Api);
    for (const namespace of [operatorNamespace, granted, elsewhere]) {
      await core.createNamespace({ body: { metadata: { name: namespace } } });
    }
    for (const namespace of [granted, elsewhere]) {
      // A Secret no object names: the operator has no reason to read it.
      await core.createNamespacedSecret({
        namespace,
        body: { metadata: { name: "unnamed" }, stringData: { password: "not the operator's" } },
      });
      await core.createNamespacedConfigMap({
        namespace,
        body: { metadata: { name: "settings" }, data: { team: namespace } },
      });
    }
    // The chart's ServiceAccount and roles, as helm installs them with secretNamespaces set.
    const rendered = await helmTemplate(
      plane,
      operatorNamespace,
      "--set",
      `secretNamespaces={${granted}}`,
      "--set",
      `inClusterKubeProviders={${granted}/self,${elsewhere}/self}`,
    );
    const rbac = rendered.objects.filter((o) =>
      ["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"].includes(o.kind),
    );
    // No controller-manager aggregates the watched ClusterRole here: what it would gather
    // (configmaps) is bound on its own, which grants the same.
    const watched = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: "gitops-reverser-watched-default-aggregated" },
      roleRef: {
        apiGroup: "rbac.authorization.k8s.io",
        kind: "ClusterRole",
        name: "gitops-reverser-watched-default",
      },
      subjects: [{ kind: "ServiceAccount", name: "gitops-reverser", namespace: operatorNamespace }],
    };
    await applyManifests(kc, [...rbac, watched] as KubernetesObject[]);
    const identity = await plane.serviceAccountToken(operatorNamespace, "gitops-reverser");
    operator = startOwnedOperator(identity.kubeConfig, "secret-namespaces", {
      inClusterKubeProviders: [`${granted}/self`, `${elsewhere}/self`],
    });
  });
  after(async () => {
    await operator?.stop();
    await git?.close();
    await plane?.stop();
    await sink?.stop();
  });

  it("the operator reads no Secret its objects do not name, and outside secretNamespaces the GitProvider says how to grant it", async () => {
    const configMaps = [{ apiGroups: [""], resources: ["configmaps"] }];
    for (const namespace of [granted, elsewhere]) {
      const url = await git.createRepository(namespace);
      await applyMirror(kc, namespace, url, user, [{ name: "apps", path: "apps", rules: configMaps }]);
    }
    await eventually(() => git.fileAt(granted, "main", `apps/${granted}/configmaps/settings.yaml`), {
      timeoutMs: 60_000,
      description: `the ConfigMap of ${granted} in Git`,
    });
    let conditions: unknown;
    const reachable = await eventually(
      async () => {
        const provider = await gitProviders(kc).get(elsewhere, "state");
        conditions = provider?.status?.conditions;
        const found = findCondition(provider?.status?.conditions, "Validated");
        return found?.status === "False" && found.message.includes("403") && found;
      },
      {
        timeoutMs: 60_000,
        description: () =>
          `the GitProvider of ${elsewhere} saying it may not read its Secret; its conditions: ${JSON.stringify(conditions)}; the operator's errors:\n${operator.errors.slice(-3).join("\n")}`,
      },
    );
    assert.match(reachable.message, new RegExp(`Secret ${elsewhere}/git .*secretNamespaces`));

    // Both credential reads reached the audit log (batched, within a second or so).
    const reads = () =>
      sink.events.filter((e) => e.user.username === account && e.objectRef?.resource === "secrets");
    await eventually(
      () =>
        reads().some((e) => e.objectRef?.namespace === granted && e.responseStatus?.code === 200) &&
        reads().some((e) => e.objectRef?.namespace === elsewhere && e.responseStatus?.code === 403),
      { timeoutMs: 30_000, description: "the operator's Secret reads in the audit log" },
    );
    const asked = new Set(reads().map((e) => `${e.verb} ${e.objectRef?.namespace}/${e.objectRef?.name}`));
    assert.deepEqual([...asked].sort(), [`get ${elsewhere}/git`, `get ${granted}/git`]);
    // And the API server agrees the grant is that narrow: the named namespace only.
    const answered = (namespace: string) =>
      new Set(
        reads()
          .filter((e) => e.objectRef?.namespace === namespace)
          .map((e) => e.responseStatus?.code),
      );
    assert.deepEqual([...answered(granted)], [200]);
    assert.deepEqual([...answered(elsewhere)], [403]);
  });
});
