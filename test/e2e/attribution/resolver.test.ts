// The resolver's cases, each against kube-apiserver's own audit webhook: what the audit policy
// records decides which evidence a fact carries, and so which tier answers. A Metadata-level
// patch has no object to read a uid from (the name tier); a deletecollection recorded at
// Metadata has no uid set (its scope answers); the rest are recorded with their response.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, RbacAuthorizationV1Api, type KubeConfig } from "@kubernetes/client-node";
import { defaultFactIndexLimits, type FactIndexLimits } from "../../../internal/attribution/factindex.ts";
import { attributionResolutions } from "../../../internal/telemetry/instruments.ts";
import { startAttributedMirror, type AttributedMirror } from "../../support/attributedmirror.ts";
import { defaultAuditPolicy } from "../../support/audit.ts";
import { grantEditing } from "../../support/attributionenv.ts";
import { kubectl } from "../../support/kubectl.ts";
import { eventually } from "../../support/wait.ts";

const namespace = "team-a";
const folder = "clusters/dev";
const fileOf = (resource: string, name: string) => `${folder}/${namespace}/${resource}/${name}.yaml`;
const aliceAuthor = "alice <alice@noreply.cluster.local>";

async function resolutions(tier: string): Promise<number> {
  const { values } = await attributionResolutions.get();
  return values.filter((v) => v.labels.tier === tier).reduce((sum, v) => sum + v.value, 0);
}

const policy = {
  ...defaultAuditPolicy,
  rules: [
    {
      level: "Metadata",
      verbs: ["patch"],
      resources: [{ group: "", resources: ["configmaps"], resourceNames: ["weak"] }],
    },
    {
      level: "Metadata",
      verbs: ["deletecollection"],
      resources: [{ group: "", resources: ["serviceaccounts"] }],
    },
    ...defaultAuditPolicy.rules,
  ],
};

/** Lets alice delete ConfigMaps and ServiceAccounts by collection, besides editing. */
async function grantCollectionDeletes(kc: KubeConfig): Promise<void> {
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createNamespacedRole({
    namespace,
    body: {
      metadata: { name: "collection-deleter" },
      rules: [
        {
          apiGroups: [""],
          resources: ["serviceaccounts", "configmaps"],
          verbs: ["create", "deletecollection", "list"],
        },
      ],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: "collection-deleters" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "collection-deleter" },
      subjects: [{ kind: "User", name: "alice", apiGroup: "rbac.authorization.k8s.io" }],
    },
  });
}

/** A control plane auditing by the policy to an operator with `graceMs`, as one describe's before and after. */
function resolverBench(graceMs: number, index?: FactIndexLimits) {
  const bench = {} as { mirror: AttributedMirror; core: CoreV1Api };
  before(async () => {
    bench.mirror = await startAttributedMirror({
      namespace,
      folder,
      rules: [{ apiGroups: [""], resources: ["configmaps", "serviceaccounts"] }],
      policy,
      graceMs,
      ...(index ? { index } : {}),
    });
    const { kc, plane } = bench.mirror;
    const alice = await plane.mintUser("alice");
    await grantEditing(kc, namespace, [
      { kind: "User", name: "alice", apiGroup: "rbac.authorization.k8s.io" },
    ]);
    await grantCollectionDeletes(kc);
    bench.core = alice.kubeConfig.makeApiClient(CoreV1Api);
  });
  after(() => bench.mirror?.stop());
  return bench;
}

describe("the resolver's cases, against the real audit webhook", () => {
  const bench = resolverBench(3_000);
  const inGit = (path: string) => bench.mirror.show(path);
  const authorOnceIs = (path: string, present: boolean) => bench.mirror.authorOnce(path, present);

  it("weak/last-key match: a fact with only a name answers by name", async () => {
    await bench.core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "weak" }, data: { k: "v1" } },
    });
    await authorOnceIs(fileOf("configmaps", "weak"), true);
    const byName = await resolutions("name");
    await bench.core.patchNamespacedConfigMap({
      namespace,
      name: "weak",
      body: [{ op: "replace", path: "/data/k", value: "v2" }],
    });
    await eventually(async () => (await inGit(fileOf("configmaps", "weak")))?.includes("v2"), {
      timeoutMs: 60_000,
      description: "the patch in Git",
    });
    assert.equal(await bench.mirror.lastCommit(fileOf("configmaps", "weak")), aliceAuthor);
    assert.ok((await resolutions("name")) > byName, "answered by the name tier");
  });

  it("a delete whose audit resourceVersion differs from the watch's is credited to the deleter", async () => {
    await bench.core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "gone" }, data: { k: "v" } },
    });
    await authorOnceIs(fileOf("configmaps", "gone"), true);
    const sticky = await resolutions("delete_sticky");
    await bench.core.deleteNamespacedConfigMap({ namespace, name: "gone" });
    assert.equal(await authorOnceIs(fileOf("configmaps", "gone"), false), aliceAuthor);
    assert.ok((await resolutions("delete_sticky")) > sticky);
  });

  it("a finalizer patch after a delete does not overwrite the deleter", async () => {
    await bench.mirror.kc.makeApiClient(CoreV1Api).createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "held", finalizers: ["example.com/hold"] }, data: { k: "v" } },
    });
    await authorOnceIs(fileOf("configmaps", "held"), true);
    await bench.core.deleteNamespacedConfigMap({ namespace, name: "held" });
    // The admin, not alice, releases the finalizer: its write carries the version the delete stamped.
    await bench.mirror.kc.makeApiClient(CoreV1Api).patchNamespacedConfigMap({
      namespace,
      name: "held",
      body: [{ op: "remove", path: "/metadata/finalizers" }],
    });
    assert.equal(await authorOnceIs(fileOf("configmaps", "held"), false), aliceAuthor);
  });

  it("a collection delete is joined by the uid set the API server returned", async () => {
    for (const name of ["batch-1", "batch-2"]) {
      await bench.core.createNamespacedConfigMap({
        namespace,
        body: { metadata: { name, labels: { batch: "one" } }, data: { k: "v" } },
      });
      await authorOnceIs(fileOf("configmaps", name), true);
    }
    const byUid = await resolutions("deletecollection_body_uid");
    await bench.core.deleteCollectionNamespacedConfigMap({ namespace, labelSelector: "batch=one" });
    for (const name of ["batch-1", "batch-2"]) {
      assert.equal(await authorOnceIs(fileOf("configmaps", name), false), aliceAuthor);
    }
    assert.ok((await resolutions("deletecollection_body_uid")) >= byUid + 2);
  });

  it("a collection delete with no uid set is joined by its scope", async () => {
    for (const name of ["robot-1", "robot-2"]) {
      await bench.core.createNamespacedServiceAccount({
        namespace,
        body: { metadata: { name, labels: { batch: "two" } } },
      });
      await authorOnceIs(fileOf("serviceaccounts", name), true);
    }
    await bench.core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: "keeper" } } });
    const byScope = await resolutions("deletecollection_scope");
    await bench.core.deleteCollectionNamespacedServiceAccount({ namespace, labelSelector: "batch=two" });
    for (const name of ["robot-1", "robot-2"]) {
      assert.equal(await authorOnceIs(fileOf("serviceaccounts", name), false), aliceAuthor);
    }
    assert.ok((await resolutions("deletecollection_scope")) >= byScope + 2);
    assert.ok(await inGit(fileOf("serviceaccounts", "keeper")), "outside its selector, kept");
  });

  it("impersonation: the write is the impersonated identity's, as RBAC judged it", async () => {
    const made = await kubectl(
      bench.mirror.plane,
      "--as=alice",
      "-n",
      namespace,
      "create",
      "configmap",
      "impersonated",
      "--from-literal=k=v",
    );
    assert.equal(made.code, 0, made.stderr);
    assert.equal(await authorOnceIs(fileOf("configmaps", "impersonated"), true), aliceAuthor);
  });
});

describe("a late fact, against the real audit webhook", () => {
  // No grace at all: the watch event ships before the audit batch (up to a second) brings its
  // fact, so the edit is unresolved, and the fact that then arrives changes nothing.
  const bench = resolverBench(0);
  const authorOnceIs = (path: string, present: boolean) => bench.mirror.authorOnce(path, present);

  it("a late fact never rewrites a commit that shipped without it", async () => {
    const made = await bench.core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "late" }, data: { k: "v" } },
    });
    const path = fileOf("configmaps", "late");
    const sentinel = "unknown (attribution unresolved) <attribution-unresolved@gitops-reverser.invalid>";
    assert.equal(await authorOnceIs(path, true), sentinel);
    const { uid = "", resourceVersion: rv = "" } = made.metadata ?? {};
    await eventually(
      () =>
        bench.mirror.operator.attribution?.index.get(
          { route: `${namespace}.self`, group: "", resource: "configmaps" },
          { kind: "exact", uid, rv },
        ),
      { timeoutMs: 30_000, description: "the late fact in the index" },
    );
    assert.equal(await bench.mirror.lastCommit(path), sentinel);
    assert.equal(
      await bench.mirror.git
        .gitIn("state", ["log", "--format=%H", "main", "--", path])
        .then((l) => l.split("\n").length),
      1,
    );
  });
});

describe("an expired fact, against the real audit webhook", () => {
  // A TTL of nothing: every fact the webhook delivers is past its TTL the moment it is read.
  const bench = resolverBench(3_000, { ...defaultFactIndexLimits, ttlMs: 0 });

  it("an expired fact is never joined: the edit is unresolved though its fact arrived", async () => {
    const absent = await resolutions("absent");
    await bench.core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "expired" }, data: { k: "v" } },
    });
    assert.equal(
      await bench.mirror.authorOnce(fileOf("configmaps", "expired")),
      "unknown (attribution unresolved) <attribution-unresolved@gitops-reverser.invalid>",
    );
    assert.ok((await resolutions("absent")) > absent);
    assert.ok(
      (bench.mirror.operator.attribution?.index.size ?? 0) > 0,
      "the fact was filed, and had expired",
    );
  });
});
