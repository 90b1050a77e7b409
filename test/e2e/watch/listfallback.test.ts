import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CoreV1Api } from "@kubernetes/client-node";
import { compileWatchRule } from "../../../internal/rulestore/compile.ts";
import { RuleStore } from "../../../internal/rulestore/store.ts";
import { WatchManager } from "../../../internal/watch/manager.ts";
import type { ObjectItem } from "../../../internal/stream/stream.ts";
import { AuditSink, type AuditEvent } from "../../support/auditsink.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { nextItem } from "../../support/streams.ts";
import { eventually } from "../../support/wait.ts";
import { quiet } from "../../support/logger.ts";

/** Audits every stage of the admin's reads of configmaps in "legacy", and nothing else. */
const readsPolicy = {
  apiVersion: "audit.k8s.io/v1",
  kind: "Policy",
  omitStages: ["Panic"],
  rules: [
    {
      level: "Metadata",
      users: ["testenv-admin"],
      verbs: ["list", "watch"],
      namespaces: ["legacy"],
      resources: [{ group: "", resources: ["configmaps"] }],
    },
    { level: "None" },
  ],
};

const dataOf = (item: ObjectItem) =>
  item.type === "snapshot"
    ? item.objects.map((o) => `${o.identity.name} ${JSON.stringify((o.object as { data?: unknown }).data)}`)
    : [`${item.type} ${item.identity.name}`];

describe("a source that refuses watch-list", () => {
  let sink: AuditSink;
  let plane: ControlPlane;
  const stop = new AbortController();
  let running: Promise<void> | undefined;
  const infos: string[] = [];

  before(async () => {
    sink = await AuditSink.start();
    // With the WatchList gate off, kube-apiserver refuses sendInitialEvents. The audit webhook
    // in blocking mode holds each audited request until the sink answers it.
    plane = await ControlPlane.start({
      extraApiServerArgs: ["--feature-gates=WatchList=false"],
      audit: { url: sink.url(), mode: "blocking", policy: readsPolicy },
    });
  });
  after(async () => {
    stop.abort();
    await running;
    await plane?.stop();
    await sink?.stop();
  });

  it("the LIST fallback buffers the watch first", async () => {
    const kc = plane.kubeConfig();
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: "legacy" } } });
    await core.createNamespacedConfigMap({
      namespace: "legacy",
      body: { metadata: { name: "before" }, data: { k: "1" } },
    });
    // The fallback's LIST waits at the API server until this test has changed the cluster.
    let listHeld = false;
    let releaseList!: () => void;
    const listReleased = new Promise<void>((resolve) => (releaseList = resolve));
    sink.beforeAnswer = (body) => {
      if (listHeld || !body.items.some((e) => e.verb === "list" && e.stage === "RequestReceived")) return;
      listHeld = true;
      return listReleased;
    };

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
      ...quiet,
      warn: (m: string) => infos.push(m),
    });
    manager.serve({ namespace: "legacy", name: "t" });
    running = manager.start(stop.signal);
    const stream = manager.streamFor({ namespace: "legacy", name: "t" });

    await eventually(() => listHeld, { description: "the fallback's LIST to reach the API server" });
    // Made after the watch opened and before the LIST is served: the LIST holds the last
    // version, and the watch's events of both versions are at or before the LIST's
    // resourceVersion, so neither may follow the snapshot (the first would undo the second).
    await core.createNamespacedConfigMap({
      namespace: "legacy",
      body: { metadata: { name: "between" }, data: { k: "1" } },
    });
    await core.patchNamespacedConfigMap({
      namespace: "legacy",
      name: "between",
      body: [{ op: "replace", path: "/data/k", value: "2" }],
    });
    releaseList();

    const snapshot = await nextItem(stream, "the snapshot");
    assert.deepEqual(dataOf(snapshot), ['before {"k":"1"}', 'between {"k":"2"}']);
    assert.ok(snapshot.type === "snapshot");
    for (const { object } of snapshot.objects) {
      assert.deepEqual([object.apiVersion, object.kind], ["v1", "ConfigMap"], "typed like a watch event");
    }
    assert.ok(
      infos.some((m) => m.includes("refused a watch-list")),
      "the fallback was taken",
    );
    await core.createNamespacedConfigMap({
      namespace: "legacy",
      body: { metadata: { name: "after" }, data: { k: "1" } },
    });
    assert.deepEqual(dataOf(await nextItem(stream, "the live create")), ["upsert after"]);

    // The order the API server saw: the fallback's watch (the one without sendInitialEvents)
    // had started its response before the LIST arrived.
    const events = sink.events;
    const isFallbackWatch = (e: AuditEvent) =>
      e.verb === "watch" && !e.requestURI?.includes("sendInitialEvents");
    const watchStarted = events.findIndex((e) => isFallbackWatch(e) && e.stage === "ResponseStarted");
    const listReceived = events.findIndex((e) => e.verb === "list" && e.stage === "RequestReceived");
    const order = events.map((e) => `${e.verb} ${e.stage} ${e.requestURI}`).join("\n");
    assert.ok(watchStarted >= 0 && listReceived >= 0, `both requests were audited:\n${order}`);
    assert.ok(watchStarted < listReceived, `the watch opened before the LIST:\n${order}`);
  });
});
