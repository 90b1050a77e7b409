import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CoreV1Api } from "@kubernetes/client-node";
import { compileWatchRule } from "../../../internal/rulestore/compile.ts";
import { RuleStore } from "../../../internal/rulestore/store.ts";
import { WatchManager } from "../../../internal/watch/manager.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { nextItem } from "../../support/streams.ts";

describe("a source that refuses watch-list", () => {
  let plane: ControlPlane;
  const stop = new AbortController();
  let running: Promise<void> | undefined;
  const infos: string[] = [];

  before(async () => {
    // With the WatchList gate off, kube-apiserver refuses sendInitialEvents.
    plane = await ControlPlane.start({ extraApiServerArgs: ["--feature-gates=WatchList=false"] });
  });
  after(async () => {
    stop.abort();
    await running;
    await plane?.stop();
  });

  it("initializes a collection with a LIST and a watch from its resourceVersion, missing nothing", async () => {
    const kc = plane.kubeConfig();
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: "legacy" } } });
    await core.createNamespacedConfigMap({
      namespace: "legacy",
      body: { metadata: { name: "before" }, data: { k: "1" } },
    });

    const rules = new RuleStore();
    rules.set(
      "WatchRule/legacy/r",
      compileWatchRule({
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "WatchRule",
        metadata: { name: "r", namespace: "legacy" },
        spec: { gitTargetRef: { name: "t" }, rules: [{ apiGroups: [""], resources: ["configmaps"] }] },
      }),
    );
    const manager = new WatchManager(kc, rules, {
      info: (m: string) => infos.push(m),
      error: () => undefined,
    });
    manager.serve({ namespace: "legacy", name: "t" });
    running = manager.start(stop.signal);
    const stream = manager.streamFor({ namespace: "legacy", name: "t" });

    const snapshot = await nextItem(stream, "the snapshot");
    assert.ok(snapshot.type === "snapshot");
    assert.deepEqual(
      snapshot.objects.map((o) => o.identity.name),
      ["before"],
    );
    assert.ok(
      infos.some((m) => m.includes("refused a watch-list")),
      "the fallback was taken",
    );

    await core.createNamespacedConfigMap({
      namespace: "legacy",
      body: { metadata: { name: "after" }, data: { k: "1" } },
    });
    const next = await nextItem(stream, "the live create");
    assert.equal(next.type === "upsert" && next.identity.name, "after");
  });
});
