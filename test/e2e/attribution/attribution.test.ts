import assert from "node:assert/strict";
import { request } from "node:https";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { kubeProviders } from "../../../generated/v1alpha3/index.ts";
import {
  attributionResolutions,
  auditRequests,
  gitCommits,
} from "../../../internal/telemetry/instruments.ts";
import { startAttributedMirror, type AttributedMirror } from "../../support/attributedmirror.ts";
import { grantEditing } from "../../support/attributionenv.ts";
import { defaultAuditPolicy } from "../../support/audit.ts";
import type { TestIdentity } from "../../support/controlplane.ts";
import { OidcIssuer } from "../../support/oidc.ts";
import { eventually } from "../../support/wait.ts";
import { conditionOf } from "../controllers/helpers.ts";

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

const namespace = "team-a";
const folder = "clusters/dev";
const fileOf = (name: string) => `${folder}/${namespace}/configmaps/${name}.yaml`;

// Both transports pass the same suite: the index does the work, the stream is only how facts travel.
for (const transport of ["memory", "redis"] as const)
  describe(`attribution (${transport} transport): the audit webhook names who made each change, and commits carry that author`, () => {
    let mirror: AttributedMirror;
    let kc: KubeConfig;
    let issuer: OidcIssuer | undefined;
    let oidcUser: TestIdentity;
    let alice: TestIdentity;
    let deployer: TestIdentity;
    const authorOf = async (name: string) => {
      await mirror.authorOnce(fileOf(name));
      return mirror.lastCommit(fileOf(name), "%an <%ae>|%cn <%ce>");
    };

    before(async () => {
      mirror = await startAttributedMirror({
        namespace,
        folder,
        rules: [{ apiGroups: [""], resources: ["configmaps"] }],
        transport,
        // The KubeProvider "self" in team-a: its route defaults to <namespace>.<name>.
        // Edits of the ConfigMap "unheard" are never audited: their facts never arrive.
        policy: {
          ...defaultAuditPolicy,
          rules: [
            {
              level: "None",
              verbs: ["update", "patch"],
              resources: [{ group: "", resources: ["configmaps"], resourceNames: ["unheard"] }],
            },
            ...defaultAuditPolicy.rules,
          ],
        },
        // OIDC users, their name and email claims mapped into user.extra.
        apiServerArgs: async (dir) => {
          issuer = await OidcIssuer.start(dir);
          return [await issuer.authenticationConfigFlag(dir)];
        },
      });
      kc = mirror.kc;
      const { plane } = mirror;
      alice = await plane.mintUser("alice");
      deployer = await plane.serviceAccountToken(namespace, "deployer");
      oidcUser = await plane.tokenUser(
        "alice.doe@example.com",
        issuer!.token({
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
    });
    after(async () => {
      await mirror?.stop();
      await issuer?.stop();
    });

    it("alice's edit is authored by alice, committed by the operator", async () => {
      const exact = await counted(attributionResolutions, { tier: "exact", actor_kind: "user" });
      const commits = await counted(gitCommits, { author_kind: "user", gittarget_name: "configs" });
      const answered = await counted(auditRequests, { code: "200" });
      const core = alice.kubeConfig.makeApiClient(CoreV1Api);
      await core.createNamespacedConfigMap({
        namespace,
        body: { metadata: { name: "alices" }, data: { k: "v" } },
      });
      assert.equal(
        await authorOf("alices"),
        "alice <alice@noreply.cluster.local>|GitOps Reverser <noreply@configbutler.ai>",
      );
      assert.ok((await counted(attributionResolutions, { tier: "exact", actor_kind: "user" })) > exact);
      assert.ok((await counted(gitCommits, { author_kind: "user", gittarget_name: "configs" })) > commits);
      assert.ok((await counted(auditRequests, { code: "200" })) > answered);
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
    it("a commit window is one author's: two authors' edits in one window are two commits", async () => {
      const [byAlice, byDeployer] = [alice, deployer].map((who) => who.kubeConfig.makeApiClient(CoreV1Api));
      await Promise.all([
        byAlice!.createNamespacedConfigMap({
          namespace,
          body: { metadata: { name: "pair-a" }, data: { k: "v" } },
        }),
        byDeployer!.createNamespacedConfigMap({
          namespace,
          body: { metadata: { name: "pair-d" }, data: { k: "v" } },
        }),
      ]);
      const [a, d] = [await authorOf("pair-a"), await authorOf("pair-d")];
      assert.match(a, /^alice </);
      assert.match(d, /^system:serviceaccount:team-a:deployer </);
      const commitOf = (name: string) => mirror.lastCommit(fileOf(name), "%H");
      assert.notEqual(await commitOf("pair-a"), await commitOf("pair-d"));
    });

    it("an edit with audit delivery blocked is authored by the unresolved sentinel, never the committer", async () => {
      const absent = await counted(attributionResolutions, { tier: "absent", actor_kind: "none" });
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
      await eventually(async () => (await mirror.show(fileOf("unheard")))?.includes("v2"), {
        timeoutMs: 60_000,
        description: "the unaudited edit in Git",
      });
      assert.equal(
        await mirror.lastCommit(fileOf("unheard"), "%an <%ae>|%cn <%ce>"),
        "unknown (attribution unresolved) <attribution-unresolved@gitops-reverser.invalid>|GitOps Reverser <noreply@configbutler.ai>",
        "not alice, whose create is the object's last fact: an update never falls through to it",
      );
      assert.ok((await counted(attributionResolutions, { tier: "absent", actor_kind: "none" })) > absent);
    });

    it("the audit ingress refuses a client without a certificate from the audit CA", async () => {
      const refusedBefore = await counted(auditRequests, { code: "tls" });
      const refused = await new Promise<string>((resolve) => {
        const req = request(
          {
            host: "127.0.0.1",
            port: mirror.env.port,
            path: `/audit-webhook/${namespace}.self`,
            method: "POST",
            ca: mirror.env.auditCa.certPem,
          },
          (res) => resolve(`answered ${res.statusCode}`),
        );
        req.on("error", (err) => resolve(`refused: ${err.message}`));
        req.end('{"kind":"EventList","items":[]}');
      });
      assert.match(refused, /^refused/);
      assert.ok(
        (await counted(auditRequests, { code: "tls" })) > refusedBefore,
        "the refused handshake is counted",
      );
    });
    it("an audit route no KubeProvider carries is refused with a 404 and no body, and counted", async () => {
      const before = await counted(auditRequests, { code: "404" });
      const post = (route: string) =>
        new Promise<{ status?: number; body: string }>((resolve, reject) => {
          const req = request(
            {
              host: "127.0.0.1",
              port: mirror.env.port,
              path: `/audit-webhook/${route}?timeout=30s`,
              method: "POST",
              ca: mirror.env.auditCa.certPem,
              cert: mirror.env.client.certPem,
              key: mirror.env.client.keyPem,
            },
            (res) => {
              let body = "";
              res.on("data", (chunk: Buffer) => (body += chunk.toString()));
              res.on("end", () => resolve({ status: res.statusCode, body }));
            },
          );
          req.on("error", reject);
          req.end('{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[]}');
        });
      assert.deepEqual(await post("nobody.carries-this"), { status: 404, body: "" });
      assert.equal((await counted(auditRequests, { code: "404" })) - before, 1);
      assert.equal(
        (await post(`${namespace}.self`)).status,
        200,
        "the route a KubeProvider carries is taken",
      );
    });

    it("a provider of another namespace cannot take a held audit route (AuditRouteConflict)", async () => {
      const other = `team-b-${transport}`;
      await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: other } } });
      await kubeProviders(kc).apply(
        {
          apiVersion: "configbutler.ai/v1alpha3",
          kind: "KubeProvider",
          metadata: { name: "intruder", namespace: other },
          spec: { inCluster: {}, attribution: { auditRoute: `${namespace}.self` } },
        },
        "test",
      );
      const refused = await conditionOf(
        kubeProviders(kc),
        other,
        "intruder",
        "Stalled",
        "True",
        undefined,
        60_000,
      );
      const stalled = refused.status?.conditions?.find((c) => c.type === "Stalled");
      assert.equal(stalled?.reason, "AuditRouteConflict");
      assert.match(stalled?.message ?? "", new RegExp(namespace), "the message names the holder");
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
