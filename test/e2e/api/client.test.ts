import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { clusterWatchRules, gitTargets, type GitTarget } from "../../../generated/v1alpha3/index.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { installCrds } from "../../support/manifests.ts";
import { eventually } from "../../support/wait.ts";

const namespace = "clients";

function gitTarget(name: string, path = "clusters/dev"): GitTarget {
  return {
    apiVersion: "configbutler.ai/v1alpha3",
    kind: "GitTarget",
    metadata: { name, namespace },
    spec: { gitBranchRef: { name: "main" }, kubeProviderRef: { name: "in-cluster" }, path },
  };
}

describe("the generated typed clients", () => {
  let plane: ControlPlane;
  let kc: KubeConfig;

  before(async () => {
    plane = await ControlPlane.start();
    kc = plane.kubeConfig();
    await installCrds(kc);
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
  });
  after(async () => {
    await plane?.stop();
  });

  it("server-side applies, gets, lists and deletes, with defaults applied", async () => {
    const client = gitTargets(kc);
    assert.equal(await client.get(namespace, "absent"), undefined);
    const applied = await client.apply(gitTarget("apply-me"), "test-manager");
    assert.equal(applied.spec.commit?.window?.idleTimeout, "5s");
    assert.equal(applied.metadata.managedFields?.[0]?.manager, "test-manager");

    const read = await client.get(namespace, "apply-me");
    assert.equal(read?.metadata.uid, applied.metadata.uid);
    const { items, resourceVersion } = await client.list(namespace);
    assert.deepEqual(
      items.map((t) => t.metadata.name),
      ["apply-me"],
    );
    assert.match(resourceVersion, /^\d+$/);

    await client.delete(namespace, "apply-me");
    await client.delete(namespace, "apply-me");
    assert.equal(await client.get(namespace, "apply-me"), undefined);
  });

  it("writes status through the status subresource, and only status", async () => {
    const client = gitTargets(kc);
    const created = await client.apply(gitTarget("with-status"), "test-manager");
    const withStatus = await client.applyStatus(
      {
        ...created,
        spec: { ...created.spec, path: "ignored/by/the/status/subresource" },
        status: {
          observedGeneration: created.metadata.generation!,
          conditions: [
            {
              type: "Ready",
              status: "False",
              reason: "GitBranchNotFound",
              message: "GitBranch clients/main does not exist",
              lastTransitionTime: new Date().toISOString(),
              observedGeneration: created.metadata.generation!,
            },
          ],
        },
      },
      "test-status-writer",
    );
    assert.equal(withStatus.spec.path, "clusters/dev");
    assert.equal(withStatus.status?.conditions?.[0]?.reason, "GitBranchNotFound");
    assert.equal(
      withStatus.metadata.generation,
      created.metadata.generation,
      "a status write moves no generation",
    );
  });

  it("watches with initial events, for a cluster-scoped kind too", async () => {
    const client = clusterWatchRules(kc);
    await client.apply(
      {
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "ClusterWatchRule",
        metadata: { name: "namespaces" },
        spec: { gitTargetRef: { name: "t", namespace }, rules: [{ resources: ["namespaces"] }] },
      },
      "test-manager",
    );
    // The API server may end a watch before its initial events, as a client must expect: a 429
    // while the kind's watch cache is still filling after its CRD was installed. A client
    // watches again; so does this test, within the one 15 s the bookmark is waited for, and names
    // every ending if none comes.
    const deadline = Date.now() + 15_000;
    const endings: string[] = [];
    let seen: string[] | undefined;
    while (!seen) {
      if (Date.now() >= deadline)
        assert.fail(`no watch reached its bookmark within 15 s; they ended: ${endings.join("; ")}`);
      const events: string[] = [];
      let ended: unknown = "open";
      const controller = await client.watch(
        undefined,
        { sendInitialEvents: true, resourceVersionMatch: "NotOlderThan", allowWatchBookmarks: true },
        (phase, object) => events.push(`${phase} ${object.metadata.name ?? ""}`),
        (err) => (ended = err),
      );
      try {
        await eventually(() => events.includes("BOOKMARK ") || ended !== "open", {
          timeoutMs: Math.max(0, deadline - Date.now()),
          description: () =>
            `the initial-events bookmark (seen: ${events.join(", ") || "nothing"}; earlier watches ended: ${endings.join("; ") || "none"})`,
        });
        if (events.includes("BOOKMARK ")) seen = events;
        else endings.push(ended instanceof Error ? ended.message : String(ended));
      } finally {
        controller.abort();
        await eventually(() => ended !== "open", { description: "the watch to end after abort" });
      }
    }
    assert.deepEqual(seen, ["ADDED namespaces", "BOOKMARK "]);
  });
});
