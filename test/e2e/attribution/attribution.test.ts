import assert from "node:assert/strict";
import { request } from "node:https";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { ControlPlane, type TestIdentity } from "../../support/controlplane.ts";
import { GitServer } from "../../support/gitserver.ts";
import { installCrds } from "../../support/manifests.ts";
import { defaultAuditPolicy } from "../../support/audit.ts";
import { applyMirror } from "../../support/mirror.ts";
import { startOperator } from "../../support/operator.ts";
import { attributionEnv, grantEditing, type AttributionEnv } from "../../support/attributionenv.ts";
import { OidcIssuer } from "../../support/oidc.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";
import { eventually } from "../../support/wait.ts";
import {
  attributionResolutions,
  auditRequests,
  gitCommits,
} from "../../../internal/telemetry/instruments.ts";

/** A counter's value for the labels given, summed over the rest. */
async function counted(
  counter: { get(): Promise<{ values: { labels: Record<string, unknown>; value: number }[] }> },
  labels: Record<string, string>,
) {
  const { values } = await counter.get();
  return values
    .filter((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))
    .reduce((sum, v) => sum + v.value, 0);
}
import { gitTargets, kubeProviders } from "../../../generated/v1alpha3/index.ts";
import { conditionOf } from "../controllers/helpers.ts";

const namespace = "team-a";
const user = { username: "gitops", password: "s3cret" };
const folder = "clusters/dev";
const fileOf = (name: string) => `${folder}/${namespace}/configmaps/${name}.yaml`;

describe("attribution: the audit webhook names who made each change, and commits carry that author", () => {
  let dir: string;
  let plane: ControlPlane;
  let git: GitServer;
  let kc: KubeConfig;
  let operator: ReturnType<typeof startOperator>;
  let workerRoot: string;
  let env: AttributionEnv;
  let issuer: OidcIssuer;
  let oidcUser: TestIdentity;
  let alice: TestIdentity;
  let deployer: TestIdentity;
  const authorOf = async (name: string) => {
    await eventually(() => git.gitIn("state", ["show", `main:${fileOf(name)}`]).catch(() => undefined), {
      timeoutMs: 60_000,
      description: `${name} in Git`,
    });
    return git.gitIn("state", ["log", "-1", "--format=%an <%ae>|%cn <%ce>", "main", "--", fileOf(name)]);
  };

  before(async () => {
    dir = makeOwnedTempDir("attribution");
    env = await attributionEnv(dir);
    issuer = await OidcIssuer.start(dir);
    [plane, git] = await Promise.all([
      ControlPlane.start({
        // The KubeProvider "self" in team-a: its route defaults to <namespace>.<name>.
        // Edits of the ConfigMap "unheard" are never audited: their facts never arrive.
        audit: env.webhook(`${namespace}.self`, {
          ...defaultAuditPolicy,
          rules: [
            {
              level: "None",
              verbs: ["update", "patch"],
              resources: [{ group: "", resources: ["configmaps"], resourceNames: ["unheard"] }],
            },
            ...defaultAuditPolicy.rules,
          ],
        }),
        // OIDC users, their name and email claims mapped into user.extra.
        extraApiServerArgs: [await issuer.authenticationConfigFlag(dir)],
      }),
      GitServer.start({ users: [user] }),
    ]);
    kc = plane.kubeConfig();
    await installCrds(kc);
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
    alice = await plane.mintUser("alice");
    deployer = await plane.serviceAccountToken(namespace, "deployer");
    oidcUser = await plane.tokenUser(
      "alice.doe@example.com",
      issuer.token({
        sub: "248289761001",
        email: "alice.doe@example.com",
        email_verified: true,
        name: "Alice Doe",
      }),
    );
    await grantEditing(kc, namespace, [
      { kind: "User", name: "alice", apiGroup: "rbac.authorization.k8s.io" },
      { kind: "User", name: "alice.doe@example.com", apiGroup: "rbac.authorization.k8s.io" },
      { kind: "ServiceAccount", name: "deployer", namespace },
    ]);
    const url = await git.createRepository("state");
    await applyMirror(kc, namespace, url, user, [
      { name: "configs", path: folder, rules: [{ apiGroups: [""], resources: ["configmaps"] }] },
    ]);
    workerRoot = makeOwnedTempDir("workers");
    operator = startOperator(kc, {
      inClusterKubeProviders: [`${namespace}/self`],
      workerRoot,
      pushCooldownMs: 0,
      attribution: env.settings(),
    });
    // Live changes from here on: what the initial snapshot writes is a resync, with no actor.
    await conditionOf(gitTargets(kc), namespace, "configs", "Ready", "True", undefined, 60_000);
  });
  after(async () => {
    await operator?.stop();
    await git?.close();
    await plane?.stop();
    await issuer?.stop();
    if (workerRoot) removeOwnedTempDir(workerRoot);
    if (dir) removeOwnedTempDir(dir);
  });

  it("alice's edit is authored by alice, committed by the operator", async () => {
    const core = alice.kubeConfig.makeApiClient(CoreV1Api);
    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "alices" }, data: { k: "v" } },
    });
    assert.equal(
      await authorOf("alices"),
      "alice <alice@noreply.cluster.local>|GitOps Reverser <noreply@configbutler.ai>",
    );
    assert.ok((await counted(attributionResolutions, { tier: "exact", actor_kind: "user" })) >= 1);
    assert.ok((await counted(gitCommits, { author_kind: "user", gittarget_name: "configs" })) >= 1);
    assert.ok((await counted(auditRequests, { code: "200" })) >= 1);
  });

  it("an OIDC user's display name and email become the author", async () => {
    const core = oidcUser.kubeConfig.makeApiClient(CoreV1Api);
    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "oidc" }, data: { k: "v" } },
    });
    assert.equal(
      await authorOf("oidc"),
      "Alice Doe <alice.doe@example.com>|GitOps Reverser <noreply@configbutler.ai>",
    );
  });

  it("a service account's edit is authored by its own username, with a derived email", async () => {
    const core = deployer.kubeConfig.makeApiClient(CoreV1Api);
    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "deployed" }, data: { k: "v" } },
    });
    assert.equal(
      await authorOf("deployed"),
      `system:serviceaccount:${namespace}:deployer <systemserviceaccount${namespace}deployer@noreply.cluster.local>|GitOps Reverser <noreply@configbutler.ai>`,
    );
  });

  it("an edit with audit delivery blocked is authored by the unresolved sentinel, never the committer", async () => {
    const core = alice.kubeConfig.makeApiClient(CoreV1Api);
    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "unheard" }, data: { k: "v1" } },
    });
    await authorOf("unheard");
    await core.patchNamespacedConfigMap({
      namespace,
      name: "unheard",
      body: [{ op: "replace", path: "/data/k", value: "v2" }],
    });
    await eventually(
      async () =>
        (await git.gitIn("state", ["show", `main:${fileOf("unheard")}`]).catch(() => "")).includes("v2"),
      { timeoutMs: 60_000, description: "the unaudited edit in Git" },
    );
    assert.equal(
      await git.gitIn("state", [
        "log",
        "-1",
        "--format=%an <%ae>|%cn <%ce>",
        "main",
        "--",
        fileOf("unheard"),
      ]),
      "unknown (attribution unresolved) <attribution-unresolved@gitops-reverser.invalid>|GitOps Reverser <noreply@configbutler.ai>",
      "not alice, whose create is the object's last fact: an update never falls through to it",
    );
    assert.ok((await counted(attributionResolutions, { tier: "absent", actor_kind: "none" })) >= 1);
  });

  it("the audit ingress refuses a client without a certificate from the audit CA", async () => {
    const refused = await new Promise<string>((resolve) => {
      const req = request(
        {
          host: "127.0.0.1",
          port: env.port,
          path: `/audit-webhook/${namespace}.self`,
          method: "POST",
          ca: env.auditCa.certPem,
        },
        (res) => resolve(`answered ${res.statusCode}`),
      );
      req.on("error", (err) => resolve(`refused: ${err.message}`));
      req.end('{"kind":"EventList","items":[]}');
    });
    assert.match(refused, /^refused/);
    assert.ok((await counted(auditRequests, { code: "tls" })) >= 1, "the refused handshake is counted");
  });

  it("the KubeProvider says its audit route delivers facts (AuditFactsReceived, never part of Ready)", async () => {
    // Looked at again on the provider's 30 s recheck.
    const provider = await conditionOf(
      kubeProviders(kc),
      namespace,
      "self",
      "AuditFactsReceived",
      "True",
      undefined,
      60_000,
    );
    assert.match(provider.status?.lastFactAt ?? "", /^\d{4}-\d\d-\d\dT\d\d:\d\d:00Z$/);
    assert.equal(provider.status?.auditRoute, `${namespace}.self`);
  });
});
