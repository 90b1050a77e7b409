import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { AuthenticationV1Api, CoreV1Api, VersionApi, Watch, type KubeConfig } from "@kubernetes/client-node";
import { ControlPlane } from "../support/controlplane.ts";

describe("control plane harness", () => {
  let plane: ControlPlane;
  let admin: KubeConfig;

  before(async () => {
    plane = await ControlPlane.start();
    admin = plane.kubeConfig();
  });
  after(async () => {
    await plane?.stop();
  });

  it("answers /readyz and reports the pinned version", async () => {
    const version = await admin.makeApiClient(VersionApi).getCode();
    assert.match(version.gitVersion, /^v1\.36\.\d+$/);
  });

  it("creates a namespace and a ConfigMap with @kubernetes/client-node", async () => {
    const core = admin.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: "smoke" } } });
    await core.createNamespacedConfigMap({
      namespace: "smoke",
      body: { metadata: { name: "settings" }, data: { color: "blue" } },
    });
    const read = await core.readNamespacedConfigMap({ namespace: "smoke", name: "settings" });
    assert.deepEqual(read.data, { color: "blue" });
  });

  it("delivers a watch-list: ADDED for each object, then a BOOKMARK marking initial-events-end", async () => {
    const core = admin.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: "watchlist" } } });
    for (const name of ["a", "b"]) {
      await core.createNamespacedConfigMap({ namespace: "watchlist", body: { metadata: { name } } });
    }

    const events: { type: string; object: Record<string, unknown> }[] = [];
    let controller: AbortController | undefined;
    const bookmarkSeen = new Promise<void>((resolve, reject) => {
      new Watch(admin)
        .watch(
          "/api/v1/namespaces/watchlist/configmaps",
          { sendInitialEvents: true, resourceVersionMatch: "NotOlderThan", allowWatchBookmarks: true },
          (type, object: Record<string, unknown>) => {
            events.push({ type, object });
            if (type === "BOOKMARK") resolve();
          },
          (err: unknown) => (err ? reject(err as Error) : undefined),
        )
        .then((c) => (controller = c), reject);
    });
    const timeout = AbortSignal.timeout(30_000);
    await Promise.race([
      bookmarkSeen,
      new Promise((_, reject) => timeout.addEventListener("abort", () => reject(new Error("no BOOKMARK")))),
    ]);
    controller?.abort();

    assert.deepEqual(
      events.map((e) => [e.type, (e.object.metadata as { name?: string }).name]),
      [
        ["ADDED", "a"],
        ["ADDED", "b"],
        ["BOOKMARK", undefined],
      ],
    );
    const bookmark = events[2]!.object;
    const resourceVersion = (bookmark.metadata as { resourceVersion: string }).resourceVersion;
    assert.match(resourceVersion, /^\d+$/);
    assert.deepEqual(bookmark, {
      kind: "ConfigMap",
      apiVersion: "v1",
      metadata: { resourceVersion, annotations: { "k8s.io/initial-events-end": "true" } },
    });
  });

  it("mints users by client certificate and ServiceAccounts by token, and enforces RBAC on both", async () => {
    const core = admin.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: "identities" } } });
    const alice = await plane.mintUser("alice", ["developers"]);
    const controller = await plane.serviceAccountToken("identities", "controller");

    for (const identity of [alice, controller]) {
      const review = await identity.kubeConfig
        .makeApiClient(AuthenticationV1Api)
        .createSelfSubjectReview({ body: {} });
      assert.equal(review.status?.userInfo?.username, identity.name);
      await assert.rejects(
        identity.kubeConfig.makeApiClient(CoreV1Api).listNamespacedConfigMap({ namespace: "identities" }),
        (err: { code?: number }) => err.code === 403,
      );
    }
    const aliceReview = await alice.kubeConfig
      .makeApiClient(AuthenticationV1Api)
      .createSelfSubjectReview({ body: {} });
    assert.deepEqual(aliceReview.status?.userInfo?.groups, ["developers", "system:authenticated"]);
  });
});
