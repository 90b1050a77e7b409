import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ClusterWatchRule, WatchRule } from "../../../generated/v1alpha3/index.ts";
import { compileClusterWatchRule, compileWatchRule } from "../../../internal/rulestore/compile.ts";
import { RuleStore } from "../../../internal/rulestore/store.ts";
import {
  followability,
  isControllerOwned,
  type ServedType,
} from "../../../internal/typeset/followability.ts";
import { removalGraceMs, TypeRegistry, type Scan } from "../../../internal/typeset/registry.ts";
import { labelSelectorString, parseLabelSelector } from "../../../internal/kube/labels.ts";
import { selectorMatches } from "../../../internal/kube/labels.ts";
import { GitTargetEventStream } from "../../../internal/stream/stream.ts";
import { planCollections } from "../../../internal/watch/watchedtypes.ts";

const verbs = ["get", "list", "watch", "create", "update", "patch", "delete"];
const served = (
  group: string,
  version: string,
  resource: string,
  kind: string,
  namespaced = true,
): ServedType => ({
  group,
  version,
  resource,
  kind,
  namespaced,
  verbs,
});

function scanOf(types: ServedType[], preferred: Record<string, string> = {}): Scan {
  const resources = new Map<string, ServedType[]>();
  for (const t of types)
    resources.set(`${t.group}/${t.version}`, [...(resources.get(`${t.group}/${t.version}`) ?? []), t]);
  return {
    groupVersions: [...resources.keys()].map((key) => {
      const [group = "", version = ""] = key.split("/");
      return { group, version, preferred: (preferred[group] ?? version) === version };
    }),
    resources,
  };
}

const cluster = [
  served("", "v1", "configmaps", "ConfigMap"),
  served("", "v1", "secrets", "Secret"),
  served("", "v1", "events", "Event"),
  served("", "v1", "namespaces", "Namespace", false),
  served("", "v1", "pods/log", "Pod"),
  served("apps", "v1", "deployments", "Deployment"),
  served("coordination.k8s.io", "v1", "leases", "Lease"),
  served("example.com", "v1", "widgets", "Widget"),
  served("example.com", "v2", "widgets", "Widget"),
];

function registryOf(types: ServedType[], preferred: Record<string, string> = {}): TypeRegistry {
  const registry = new TypeRegistry();
  registry.update(scanOf(types, preferred), 0);
  return registry;
}

function watchRule(rules: WatchRule["spec"]["rules"], namespace = "team-a"): WatchRule {
  return {
    apiVersion: "configbutler.ai/v1alpha3",
    kind: "WatchRule",
    metadata: { name: "r", namespace },
    spec: { gitTargetRef: { name: "t" }, rules },
  };
}

describe("compiling rules", () => {
  it("a WatchRule item watches the rule's own namespace unless it names another", () => {
    const [own, other, all] = compileWatchRule(
      watchRule([
        { resources: ["configmaps"] },
        { resources: ["configmaps"], sourceNamespace: "shared" },
        { resources: ["configmaps"], sourceNamespace: "*" },
      ]),
    );
    assert.equal(own?.sourceNamespace, "team-a");
    assert.equal(other?.sourceNamespace, "shared");
    assert.equal(all?.sourceNamespace, "", 'sourceNamespace "*" compiles to the one cluster-wide collection');
  });

  it("a ClusterWatchRule is cluster-scoped and names its target's namespace", () => {
    const rule: ClusterWatchRule = {
      apiVersion: "configbutler.ai/v1alpha3",
      kind: "ClusterWatchRule",
      metadata: { name: "c" },
      spec: { gitTargetRef: { name: "t", namespace: "team-a" }, rules: [{ resources: ["namespaces"] }] },
    };
    const [compiled] = compileClusterWatchRule(rule);
    assert.deepEqual(
      [compiled?.scope, compiled?.target, compiled?.sourceNamespace],
      ["Cluster", { namespace: "team-a", name: "t" }, ""],
    );
  });

  it("the RuleStore replaces a rule object's items at once and tells which targets changed", () => {
    const store = new RuleStore();
    const changed: string[] = [];
    store.onChange((targets) => changed.push(...targets.map((t) => `${t.namespace}/${t.name}`)));
    store.set(
      "WatchRule/team-a/r",
      compileWatchRule(watchRule([{ resources: ["configmaps"] }, { resources: ["secrets"] }])),
    );
    assert.equal(store.rulesFor({ namespace: "team-a", name: "t" }).length, 2);
    store.delete("WatchRule/team-a/r");
    assert.deepEqual(store.rulesFor({ namespace: "team-a", name: "t" }), []);
    assert.deepEqual(changed, ["team-a/t", "team-a/t"]);
  });
});

describe("followability", () => {
  it("never follows Events, Leases, subresources or types that cannot be watched", () => {
    assert.equal(followability(served("", "v1", "events", "Event")).followable, false);
    assert.equal(followability(served("coordination.k8s.io", "v1", "leases", "Lease")).followable, false);
    assert.equal(followability(served("", "v1", "pods/log", "Pod")).followable, false);
    assert.equal(
      followability({ ...served("", "v1", "bindings", "Binding"), verbs: ["create"] }).followable,
      false,
    );
    assert.equal(followability(served("", "v1", "configmaps", "ConfigMap")).followable, true);
  });

  it("a controller-owned object is another controller's output", () => {
    assert.equal(isControllerOwned({ metadata: { ownerReferences: [{ controller: true }] } }), true);
    assert.equal(isControllerOwned({ metadata: { ownerReferences: [{ controller: false }] } }), false);
    assert.equal(isControllerOwned({ metadata: {} }), false);
  });
});

describe("the type registry", () => {
  it("keeps a group version whose resources could not be read this scan", () => {
    const registry = registryOf(cluster);
    const blink = scanOf(cluster.filter((t) => t.group !== "apps"));
    blink.groupVersions.push({ group: "apps", version: "v1", preferred: true });
    registry.update(blink, 1);
    assert.ok(registry.all().some((t) => t.resource === "deployments"));
  });

  it("removes a type that vanished from complete scans only after its removal grace", () => {
    const registry = registryOf(cluster);
    const without = scanOf(cluster.filter((t) => t.group !== "example.com"));
    assert.equal(registry.update(without, 1000), false);
    assert.ok(
      registry.all().some((t) => t.resource === "widgets"),
      "still served within the grace",
    );
    assert.equal(registry.update(without, 1000 + removalGraceMs), true);
    assert.equal(
      registry.all().some((t) => t.resource === "widgets"),
      false,
    );
  });
});

describe("planning collections (the WatchedTypeTable)", () => {
  const plan = (rules: WatchRule["spec"]["rules"], preferred: Record<string, string> = {}) =>
    planCollections(compileWatchRule(watchRule(rules)), registryOf(cluster, preferred).all());

  it("resolves a named resource across served groups, at its preferred version", () => {
    const { collections } = plan([{ resources: ["widgets"] }], { "example.com": "v2" });
    assert.deepEqual(
      collections.map((c) => `${c.group}/${c.version}/${c.resource}@${c.namespace}`),
      ["example.com/v2/widgets@team-a"],
    );
  });

  it("reads at a version the rule names, when served", () => {
    const { collections } = plan([{ resources: ["widgets"], apiVersions: ["v1"] }], { "example.com": "v2" });
    assert.equal(collections[0]?.version, "v1");
  });

  it("a wildcard claims only followable namespaced types", () => {
    const { collections } = plan([{ apiGroups: ["*"], resources: ["*"] }]);
    assert.deepEqual(
      collections.map((c) => `${c.group}/${c.resource}`),
      ["/configmaps", "/secrets", "apps/deployments", "example.com/widgets"],
    );
  });

  it("keeps a named-namespace collection and the cluster-wide one apart, and a selector makes its own", () => {
    const { collections } = plan([
      { apiGroups: [""], resources: ["configmaps"] },
      { apiGroups: [""], resources: ["configmaps"], sourceNamespace: "*" },
      { apiGroups: [""], resources: ["configmaps"], objectSelector: { matchLabels: { mirror: "true" } } },
    ]);
    assert.deepEqual(
      collections.map((c) => c.key),
      ["/configmaps@?", "/configmaps@team-a?", "/configmaps@team-a?mirror=true"],
    );
  });

  it("reports a rule that matches nothing served as unresolved", () => {
    const { collections, unresolved } = plan([{ apiGroups: ["nope.io"], resources: ["things"] }]);
    assert.deepEqual(collections, []);
    assert.equal(unresolved.length, 1);
  });

  it("a WatchRule never claims a cluster-scoped type", () => {
    assert.deepEqual(plan([{ apiGroups: [""], resources: ["namespaces"] }]).collections, []);
  });
});

describe("labelSelectorString", () => {
  it("renders labels and expressions in a stable order", () => {
    assert.equal(
      labelSelectorString({
        matchLabels: { b: "2", a: "1" },
        matchExpressions: [
          { key: "env", operator: "In", values: ["prod", "dev"] },
          { key: "tier", operator: "NotIn", values: ["db"] },
          { key: "team", operator: "Exists" },
          { key: "legacy", operator: "DoesNotExist" },
        ],
      }),
      "a=1,b=2,env in (dev,prod),tier notin (db),team,!legacy",
    );
    assert.equal(labelSelectorString(undefined), "");
  });
});

/** The ConfigMaps collection a rule on configmaps plans. */
const configMaps = () =>
  planCollections(compileWatchRule(watchRule([{ resources: ["configmaps"] }])), registryOf(cluster).all())
    .collections[0]!;

describe("GitTargetEventStream", () => {
  it("delivers items in arrival order, to readers waiting and not, and ends after close", async () => {
    const stream = new GitTargetEventStream({ namespace: "a", name: "t" });
    const collection = configMaps();
    const waiting = stream.next();
    stream.push({ type: "snapshot", collection, objects: [] });
    stream.push({
      type: "delete",
      collection,
      identity: {
        group: "",
        version: "v1",
        resource: "configmaps",
        kind: "ConfigMap",
        namespace: "a",
        name: "x",
        uid: "u",
      },
    });
    assert.equal((await waiting).value?.type, "snapshot");
    stream.close();
    assert.equal((await stream.next()).value?.type, "delete", "queued items survive close");
    assert.equal((await stream.next()).done, true);
  });
});

describe("a GitTargetEventStream handed over", () => {
  it("is read out once its reader took what was queued at close, or is waiting when it closes; a stream nobody reads is given up on after the bound", async () => {
    const collection = configMaps();
    const queued = new GitTargetEventStream({ namespace: "a", name: "t" });
    queued.push({ type: "snapshot", collection, objects: [] });
    queued.close();
    let readOut = false;
    const reading = queued.readOutWithin(60_000).then(() => (readOut = true));
    await Promise.resolve();
    assert.equal(readOut, false, "an item is still queued");
    assert.equal((await queued.next()).value?.type, "snapshot");
    assert.equal((await queued.next()).done, true);
    await reading;

    const waiting = new GitTargetEventStream({ namespace: "a", name: "u" });
    const next = waiting.next();
    waiting.close();
    assert.equal((await next).done, true);
    await waiting.readOutWithin(60_000);

    const unread = new GitTargetEventStream({ namespace: "a", name: "v" });
    unread.push({ type: "snapshot", collection, objects: [] });
    unread.close();
    await unread.readOutWithin(10);
  });

  it("is read out at once when its reader waits for its target to be attached again (parked, or holding an item it took), before or after the close; not while it hands one to a worker", async () => {
    const collection = configMaps();
    const parkedFirst = new GitTargetEventStream({ namespace: "a", name: "p" });
    parkedFirst.push({ type: "snapshot", collection, objects: [] });
    parkedFirst.readerMovedTo("parked");
    parkedFirst.close();
    assert.equal(
      await parkedFirst.readOutWithin(60_000),
      true,
      "queued items are read again from the cursors",
    );

    const holdingLater = new GitTargetEventStream({ namespace: "a", name: "q" });
    holdingLater.readerMovedTo("next");
    holdingLater.close();
    const reading = holdingLater.readOutWithin(60_000);
    holdingLater.readerMovedTo("holding");
    assert.equal(await reading, true, "the item held, never taken, is read again from the cursors");

    const accepting = new GitTargetEventStream({ namespace: "a", name: "r" });
    accepting.readerMovedTo("accept");
    accepting.close();
    assert.equal(
      await accepting.readOutWithin(20),
      false,
      "an item being handed to the worker is waited for",
    );
  });

  it("tells who listens which items its reader handed to the branch worker, until they stop listening", () => {
    const stream = new GitTargetEventStream({ namespace: "a", name: "t" });
    const collection = configMaps();
    const seen: string[] = [];
    const stop = stream.onTaken((item) => seen.push(item.type));
    stream.taken({ type: "snapshot", collection, objects: [] });
    stop();
    stream.taken({ type: "replaying", collection });
    assert.deepEqual(seen, ["snapshot"]);
  });
});

describe("a paused GitTargetEventStream", () => {
  it("tells its watches to stop reading until the branch resumes, and a close wakes them too", async () => {
    const stream = new GitTargetEventStream({ namespace: "apps", name: "t" });
    assert.equal(stream.paused, false);
    await stream.whenResumed();
    stream.pause();
    assert.equal(stream.paused, true);
    let woken = 0;
    const waiting = [stream.whenResumed(), stream.whenResumed()].map((p) => p.then(() => woken++));
    stream.resume();
    await Promise.all(waiting);
    assert.equal(woken, 2);
    stream.pause();
    const closing = stream.whenResumed();
    stream.close();
    await closing;
    assert.equal(stream.paused, false);
  });
});

describe("a labelSelector string read back", () => {
  it("means what the API server parses it as, and what it cannot read is undefined", () => {
    const matches = (text: string, labels: Record<string, string>) =>
      selectorMatches(parseLabelSelector(text)!, labels);
    assert.equal(matches("app=web", { app: "web" }), true);
    assert.equal(matches("app==web,tier!=db", { app: "web", tier: "fe" }), true);
    assert.equal(matches("app in (web, api),!legacy", { app: "api" }), true);
    assert.equal(matches("app in (web, api),!legacy", { app: "api", legacy: "" }), false);
    assert.equal(matches("app notin (web),example.com/team", { app: "api" }), false);
    assert.equal(parseLabelSelector("app=(web"), undefined);
    assert.equal(parseLabelSelector("app web"), undefined);
    const written = labelSelectorString({
      matchLabels: { a: "1" },
      matchExpressions: [
        { key: "b", operator: "In", values: ["x", "y"] },
        { key: "c", operator: "DoesNotExist" },
      ],
    });
    assert.equal(matches(written, { a: "1", b: "y" }), true);
    assert.equal(matches(written, { a: "1", b: "y", c: "" }), false);
  });
});
