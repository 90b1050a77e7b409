import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, RbacAuthorizationV1Api } from "@kubernetes/client-node";
import { AuditSink } from "../support/auditsink.ts";
import { ControlPlane } from "../support/controlplane.ts";
import { eventually } from "../support/wait.ts";

describe("audit webhook harness", () => {
  let sink: AuditSink;
  let plane: ControlPlane;

  before(async () => {
    sink = await AuditSink.start();
    plane = await ControlPlane.start({ audit: { url: sink.url("/audit-webhook/team-a.source") } });
  });
  after(async () => {
    await plane?.stop();
    await sink?.stop();
  });

  it("posts a write by alice as an audit.k8s.io/v1 EventList at ResponseComplete, with the persisted resourceVersion", async () => {
    const admin = plane.kubeConfig();
    await admin.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: "team-a" } } });
    await admin.makeApiClient(RbacAuthorizationV1Api).createNamespacedRoleBinding({
      namespace: "team-a",
      body: {
        metadata: { name: "alice-edit" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
        subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: "alice" }],
      },
    });
    const alice = await plane.mintUser("alice", ["developers"]);
    const created = await alice.kubeConfig.makeApiClient(CoreV1Api).createNamespacedConfigMap({
      namespace: "team-a",
      body: { metadata: { name: "by-alice" }, data: { k: "v" } },
    });

    const event = await eventually(
      () =>
        sink.events.find(
          (e) => e.objectRef?.name === "by-alice" && e.verb === "create" && e.user.username === "alice",
        ),
      { timeoutMs: 15_000, description: "alice's create to reach the audit webhook" },
    );
    const delivery = sink.received.find((r) => r.body.items.includes(event))!;
    assert.equal(delivery.path, "/audit-webhook/team-a.source");
    // kube-apiserver adds its client timeout to the configured URL; a route must not include the query.
    assert.equal(delivery.query, "?timeout=30s");
    assert.equal(delivery.body.apiVersion, "audit.k8s.io/v1");
    assert.equal(delivery.body.kind, "EventList");
    assert.equal(event.stage, "ResponseComplete");
    assert.deepEqual(event.user.groups, ["developers", "system:authenticated"]);
    assert.equal(event.objectRef?.resource, "configmaps");
    assert.equal(event.objectRef?.namespace, "team-a");
    assert.equal(event.responseStatus?.code, 201);
    assert.equal(event.responseObject?.metadata?.resourceVersion, created.metadata?.resourceVersion);
    assert.equal(event.responseObject?.metadata?.uid, created.metadata?.uid);
  });

  it("leaves reads out of the default policy", () => {
    assert.equal(
      sink.events.some((e) => ["get", "list", "watch"].includes(e.verb)),
      false,
    );
  });
});
