import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  ApiextensionsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  V1MicroTime,
  type KubeConfig,
} from "@kubernetes/client-node";
import { gitTargets, type WatchRule } from "../../../generated/v1alpha3/index.ts";
import { compileWatchRule } from "../../../internal/rulestore/compile.ts";
import { RuleStore } from "../../../internal/rulestore/store.ts";
import { WatchManager } from "../../../internal/watch/manager.ts";
import type { ObjectItem } from "../../../internal/stream/stream.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { installCrds } from "../../support/manifests.ts";
import { nextItem } from "../../support/streams.ts";
import { eventually } from "../../support/wait.ts";
import { quiet } from "../../support/logger.ts";

/** A one-line picture of an item, for exact assertions on order. */
function describeItem(item: ObjectItem): string {
  if (item.type === "snapshot") {
    return `snapshot ${item.collection.resource} [${item.objects.map((o) => o.identity.name).join(",")}]`;
  }
  if (item.type === "delete") return `delete ${item.identity.resource} ${item.identity.name}`;
  const data = (item.object as { data?: Record<string, string> }).data;
  return `upsert ${item.identity.resource} ${item.identity.name}${data ? ` ${JSON.stringify(data)}` : ""}`;
}

function watchRule(namespace: string, target: string, rules: WatchRule["spec"]["rules"]): WatchRule {
  return {
    apiVersion: "configbutler.ai/v1alpha3",
    kind: "WatchRule",
    metadata: { name: `${target}-rule`, namespace },
    spec: { gitTargetRef: { name: target }, rules },
  };
}

describe("the watch plane streams desired state per GitTarget", () => {
  let plane: ControlPlane;
  let kc: KubeConfig;
  let core: CoreV1Api;
  const rules = new RuleStore();
  let manager: WatchManager;
  const stop = new AbortController();
  let running: Promise<void>;

  const setRule = (rule: WatchRule) => {
    rules.set(`WatchRule/${rule.metadata.namespace}/${rule.metadata.name}`, compileWatchRule(rule));
    manager.serve({ namespace: rule.metadata.namespace!, name: rule.spec.gitTargetRef.name });
  };
  const configMap = (
    namespace: string,
    name: string,
    data: Record<string, string>,
    labels?: Record<string, string>,
  ) => core.createNamespacedConfigMap({ namespace, body: { metadata: { name, labels }, data } });

  before(async () => {
    plane = await ControlPlane.start();
    kc = plane.kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    await installCrds(kc);
    for (const name of ["snap", "status", "selector", "later", "noise", "restart"]) {
      await core.createNamespace({ body: { metadata: { name } } });
    }
    await configMap("snap", "a", { k: "1" });
    await configMap("snap", "b", { k: "2" });
    manager = new WatchManager(kc, rules, quiet, { catalogRefreshMs: 500 });
    setRule(watchRule("snap", "snap", [{ apiGroups: [""], resources: ["configmaps"] }]));
    running = manager.start(stop.signal);
  });
  after(async () => {
    stop.abort();
    await running;
    await plane?.stop();
  });

  it("delivers the objects that existed before it started as the initial snapshot, sanitized", async () => {
    const stream = manager.streamFor({ namespace: "snap", name: "snap" });
    const marker = await stream.next();
    assert.equal(
      marker.value?.type,
      "replaying",
      "the render gate hears that a replay began, before its snapshot",
    );
    const item = await nextItem(stream, "the initial snapshot");
    assert.equal(describeItem(item), "snapshot configmaps [a,b]");
    assert.ok(item.type === "snapshot");
    const first = item.objects[0]!;
    assert.deepEqual(first.identity.namespace, "snap");
    assert.match(first.identity.uid, /^[0-9a-f-]{36}$/);
    assert.equal(first.object.metadata?.resourceVersion, undefined, "sanitized: no resourceVersion");
    assert.equal(first.object.metadata?.managedFields, undefined, "sanitized: no managedFields");
  });

  it("delivers creates, updates and deletes after the snapshot, in order", async () => {
    const stream = manager.streamFor({ namespace: "snap", name: "snap" });
    await configMap("snap", "c", { k: "1" });
    await core.patchNamespacedConfigMap({
      namespace: "snap",
      name: "c",
      body: [{ op: "replace", path: "/data/k", value: "2" }],
    });
    await core.deleteNamespacedConfigMap({ namespace: "snap", name: "c" });
    const seen = [];
    for (let i = 0; i < 3; i++) seen.push(describeItem(await nextItem(stream, `live event ${i + 1}`)));
    assert.deepEqual(seen, [
      'upsert configmaps c {"k":"1"}',
      'upsert configmaps c {"k":"2"}',
      "delete configmaps c",
    ]);
  });

  it("keeps a running collection when the plan adds another, so it is not replayed", async () => {
    setRule(
      watchRule("snap", "snap", [
        { apiGroups: [""], resources: ["configmaps"] },
        { apiGroups: [""], resources: ["secrets"] },
      ]),
    );
    const stream = manager.streamFor({ namespace: "snap", name: "snap" });
    assert.equal(
      describeItem(await nextItem(stream, "the new collection's snapshot")),
      "snapshot secrets []",
    );
    await configMap("snap", "f", { k: "1" });
    assert.equal(
      describeItem(await nextItem(stream, "a live event on the kept collection")),
      'upsert configmaps f {"k":"1"}',
    );
  });

  it("produces no event for a status-only update", async () => {
    setRule(watchRule("status", "status", [{ apiGroups: ["configbutler.ai"], resources: ["gittargets"] }]));
    const stream = manager.streamFor({ namespace: "status", name: "status" });
    assert.equal(describeItem(await nextItem(stream, "the gittargets snapshot")), "snapshot gittargets []");
    const targets = gitTargets(kc);
    const spec = { gitBranchRef: { name: "main" }, kubeProviderRef: { name: "k" }, path: "p" };
    const created = await targets.apply(
      {
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "GitTarget",
        metadata: { name: "t", namespace: "status" },
        spec,
      },
      "test",
    );
    assert.equal(describeItem(await nextItem(stream, "the create")), "upsert gittargets t");
    await targets.applyStatus(
      {
        ...created,
        status: {
          conditions: [
            {
              type: "Ready",
              status: "True",
              reason: "Succeeded",
              message: "",
              lastTransitionTime: new Date().toISOString(),
            },
          ],
        },
      },
      "status-writer",
    );
    await targets.apply(
      {
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "GitTarget",
        metadata: { name: "t", namespace: "status" },
        spec: { ...spec, suspend: true },
      },
      "test",
    );
    const next = await nextItem(stream, "the spec change");
    assert.ok(next.type === "upsert", describeItem(next));
    assert.equal(
      (next.object as { spec?: { suspend?: boolean } }).spec?.suspend,
      true,
      "the status write sent nothing before it",
    );
  });

  it("delivers an object that stops matching the rule's objectSelector as a delete", async () => {
    setRule(
      watchRule("selector", "selector", [
        { apiGroups: [""], resources: ["configmaps"], objectSelector: { matchLabels: { mirror: "true" } } },
      ]),
    );
    const stream = manager.streamFor({ namespace: "selector", name: "selector" });
    assert.equal(describeItem(await nextItem(stream, "the snapshot")), "snapshot configmaps []");
    await configMap("selector", "ignored", { k: "1" });
    await configMap("selector", "picked", { k: "1" }, { mirror: "true" });
    assert.equal(
      describeItem(await nextItem(stream, "the labelled create")),
      'upsert configmaps picked {"k":"1"}',
    );
    await core.patchNamespacedConfigMap({
      namespace: "selector",
      name: "picked",
      body: [{ op: "replace", path: "/metadata/labels/mirror", value: "false" }],
    });
    const exit = await nextItem(stream, "the delete");
    assert.equal(describeItem(exit), "delete configmaps picked");
    // The object is still there: its delete says so, with the labels it has now.
    assert.deepEqual(exit.type === "delete" && exit.exited, { labels: { mirror: "false" } });
    await core.patchNamespacedConfigMap({
      namespace: "selector",
      name: "picked",
      body: [{ op: "replace", path: "/metadata/labels/mirror", value: "true" }],
    });
    assert.equal(
      describeItem(await nextItem(stream, "the relabel back")),
      'upsert configmaps picked {"k":"1"}',
    );
    await core.deleteNamespacedConfigMap({ namespace: "selector", name: "picked" });
    const deletion = await nextItem(stream, "the deletion");
    assert.equal(describeItem(deletion), "delete configmaps picked");
    assert.equal(deletion.type === "delete" && deletion.exited, undefined, "a deletion is no exit");
  });

  it("stops when it is stopped while it still discovers, as a replaced source context is", async () => {
    const other = new WatchManager(kc, new RuleStore(), quiet);
    other.serve({ namespace: "snap", name: "snap" });
    const abort = new AbortController();
    let stopped = false;
    const run = other.start(abort.signal).then(() => (stopped = true));
    // Aborted before discovery answers: the wait for the abort begins after it already fired.
    abort.abort();
    await eventually(() => stopped, { timeoutMs: 10_000, description: "the manager to stop" });
    await run;
  });

  it("discovers a CRD installed later, and streams its objects once a rule selects it", async () => {
    setRule(watchRule("later", "later", [{ apiGroups: ["example.com"], resources: ["widgets"] }]));
    assert.equal(manager.planOf({ namespace: "later", name: "later" })?.unresolved.length, 1);
    await kc.makeApiClient(ApiextensionsV1Api).createCustomResourceDefinition({
      body: {
        metadata: { name: "widgets.example.com" },
        spec: {
          group: "example.com",
          names: { kind: "Widget", plural: "widgets", singular: "widget", listKind: "WidgetList" },
          scope: "Namespaced",
          versions: [
            {
              name: "v1",
              served: true,
              storage: true,
              schema: { openAPIV3Schema: { type: "object", x_kubernetes_preserve_unknown_fields: true } },
            },
          ],
        },
      },
    });
    const stream = manager.streamFor({ namespace: "later", name: "later" });
    assert.equal(describeItem(await nextItem(stream, "the widgets snapshot")), "snapshot widgets []");
    await eventually(
      () =>
        kc.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
          group: "example.com",
          version: "v1",
          namespace: "later",
          plural: "widgets",
          body: { apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "w" }, spec: { size: 3 } },
        }),
      { description: "the new CRD to serve its kind" },
    );
    assert.equal(describeItem(await nextItem(stream, "the widget")), "upsert widgets w");
  });

  it("never streams Events or Leases, even under a rule that selects everything", async () => {
    await core.createNamespacedEvent({
      namespace: "noise",
      body: {
        metadata: { name: "e1" },
        involvedObject: { kind: "ConfigMap", name: "x", namespace: "noise" },
        reason: "Test",
        message: "noise",
      },
    });
    await kc.makeApiClient(CoordinationV1Api).createNamespacedLease({
      namespace: "noise",
      body: { metadata: { name: "l1" }, spec: { holderIdentity: "x", renewTime: new V1MicroTime() } },
    });
    setRule(watchRule("noise", "noise", [{ apiGroups: ["*"], resources: ["*"] }]));
    const plan = manager.planOf({ namespace: "noise", name: "noise" })!;
    const resources = plan.collections.map((c) => `${c.group}/${c.resource}`);
    for (const never of [
      "/events",
      "events.k8s.io/events",
      "coordination.k8s.io/leases",
      "/endpoints",
      "discovery.k8s.io/endpointslices",
    ]) {
      assert.equal(resources.includes(never), false, `${never} was planned`);
    }
    assert.ok(resources.includes("/configmaps") && resources.includes("apps/deployments"));
    await eventually(
      () => manager.summary({ namespace: "noise", name: "noise" }).running === plan.collections.length,
      {
        description: "every collection past its snapshot",
      },
    );
  });

  it("recovers from a restarted API server with nothing lost or duplicated", async () => {
    setRule(watchRule("restart", "restart", [{ apiGroups: [""], resources: ["configmaps"] }]));
    const stream = manager.streamFor({ namespace: "restart", name: "restart" });
    assert.equal(describeItem(await nextItem(stream, "the snapshot")), "snapshot configmaps []");
    await configMap("restart", "d", { k: "1" });
    assert.equal(describeItem(await nextItem(stream, "the create")), 'upsert configmaps d {"k":"1"}');

    // A restarted kube-apiserver's watch cache starts at the current revision, so resuming from
    // an older resourceVersion may answer 410 Gone, and the collection initializes again: a
    // snapshot of current state, after which live events follow. Either way, the state the
    // stream describes must end equal to the cluster's, and no change may arrive twice.
    await plane.restartApiServer();
    core = plane.kubeConfig().makeApiClient(CoreV1Api);
    await core.patchNamespacedConfigMap({
      namespace: "restart",
      name: "d",
      body: [{ op: "replace", path: "/data/k", value: "2" }],
    });
    await configMap("restart", "e", { k: "1" });

    const state = new Map<string, string>([["d", '{"k":"1"}']]);
    const seen: string[] = [];
    while (state.get("d") !== '{"k":"2"}' || state.get("e") !== '{"k":"1"}') {
      const item = await nextItem(
        stream,
        `d at k=2 and e at k=1 after the restart (seen: ${seen.join("; ")})`,
        60_000,
      );
      seen.push(describeItem(item));
      if (item.type === "snapshot") {
        state.clear();
        for (const o of item.objects)
          state.set(o.identity.name, JSON.stringify((o.object as { data?: unknown }).data));
      } else if (item.type === "upsert") {
        const data = JSON.stringify((item.object as { data?: unknown }).data);
        assert.notEqual(
          state.get(item.identity.name),
          data,
          `a duplicate upsert of ${item.identity.name}: ${seen.join("; ")}`,
        );
        state.set(item.identity.name, data);
      } else {
        state.delete(item.identity.name);
      }
    }
    assert.deepEqual([...state.keys()].sort(), ["d", "e"]);
    assert.equal(stream.pending, 0, `nothing more was delivered: ${seen.join("; ")}`);
  });
});
