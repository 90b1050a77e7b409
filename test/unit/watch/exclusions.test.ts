import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { KubernetesObject, V1ManagedFieldsEntry } from "@kubernetes/client-node";
import type { WatchRule } from "../../../generated/v1alpha3/index.ts";
import { compileWatchRule } from "../../../internal/rulestore/compile.ts";
import {
  compileExclusions,
  excludedBy,
  exclusionsEffective,
  globOf,
  ruleExcludes,
  userMayExclude,
  type RuleExclusions,
  type WriteFacts,
} from "../../../internal/rulestore/exclusions.ts";
import { candidateWriters, CollectionExclusions } from "../../../internal/watch/excluder.ts";
import { LastWrites } from "../../../internal/watch/lastwriter.ts";
import { planCollections } from "../../../internal/watch/watchedtypes.ts";
import type { TypeRecord } from "../../../internal/typeset/registry.ts";
import { withExclusions } from "../../../controllers/watchrule.ts";
import { readyTrio, progressingTrio } from "../../../internal/operator/conditions.ts";

const at = (s: number) => new Date(Date.UTC(2026, 11, 6, 10, 0, s));
const entry = (
  manager: string,
  second: number,
  fields: object,
  subresource?: string,
): V1ManagedFieldsEntry => ({
  manager,
  operation: "Apply",
  time: at(second),
  fieldsType: "FieldsV1",
  fieldsV1: fields,
  ...(subresource ? { subresource } : {}),
});
const configMap = (rv: number, name: string, ...entries: V1ManagedFieldsEntry[]): KubernetesObject => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, namespace: "shop", resourceVersion: String(rv), managedFields: entries },
});
const rule = (spec: Parameters<typeof compileExclusions>[0]): RuleExclusions => compileExclusions(spec)!;
const write = (facts: Partial<WriteFacts>): WriteFacts => ({
  namespace: "shop",
  name: "settings",
  removal: false,
  writers: [],
  ...facts,
});

describe("who to ignore: the decision", () => {
  it("a write by an excluded field manager is kept out, a write by anyone else is not", () => {
    const bots = rule({ excludeFieldManagers: ["image-bot"] });
    assert.equal(ruleExcludes(bots, write({ writers: ["image-bot"] })), "field_manager");
    assert.equal(ruleExcludes(bots, write({ writers: ["kubectl"] })), undefined);
    assert.equal(ruleExcludes(bots, write({ writers: [] })), undefined, "no writer known: mirrored");
  });

  it("a delete is never excluded by field manager or user, but excludeObjects applies to it", () => {
    const all = rule({
      excludeFieldManagers: ["image-bot"],
      excludeUsers: ["alice"],
      excludeObjects: ["kube-root-ca.crt"],
    });
    assert.equal(
      ruleExcludes(all, write({ removal: true, writers: ["image-bot"], user: "alice" })),
      undefined,
    );
    assert.equal(ruleExcludes(all, write({ removal: true, name: "kube-root-ca.crt" })), "object");
  });

  it("where the writer is not proven, it is a listed manager's only when every newest entry is listed", () => {
    const bots = rule({ excludeFieldManagers: ["image-bot", "ci-*"] });
    assert.equal(ruleExcludes(bots, write({ writers: ["image-bot", "ci-deployer"] })), "field_manager");
    assert.equal(ruleExcludes(bots, write({ writers: ["image-bot", "kubectl"] })), undefined);
  });

  it("the candidates are the proven writer, else the content entries that share the newest time", () => {
    const object = configMap(
      3,
      "settings",
      entry("kubectl", 2, { "f:data": {} }),
      entry("image-bot", 7, { "f:data": {} }),
      entry("ci-deployer", 7, { "f:data": {} }),
      entry("status-writer", 9, { "f:status": {} }, "status"),
    );
    assert.deepEqual(candidateWriters({ known: "kubectl" }, object), ["kubectl"]);
    assert.deepEqual(candidateWriters({ unknown: "no previous event" }, object), [
      "image-bot",
      "ci-deployer",
    ]);
  });

  it("excludeUsers judges the audit user once it is known; an unresolved one is mirrored", () => {
    const ci = rule({ excludeUsers: ["system:serviceaccount:ci:*"] });
    assert.equal(ruleExcludes(ci, write({ user: "system:serviceaccount:ci:deployer" })), "user");
    assert.equal(ruleExcludes(ci, write({ user: "alice" })), undefined);
    assert.equal(ruleExcludes(ci, write({})), undefined);
    assert.equal(userMayExclude([ci], write({})), true, "the watch waits for the user");
    assert.equal(userMayExclude([ci], write({ removal: true })), false);
    assert.equal(userMayExclude([rule({ excludeFieldManagers: ["x"] })], write({})), false);
  });

  it("excludeObjects matches [namespace/]name patterns with *", () => {
    const objects = rule({ excludeObjects: ["kube-root-ca.crt", "team-a/*-cache"] });
    assert.equal(ruleExcludes(objects, write({ namespace: "any", name: "kube-root-ca.crt" })), "object");
    assert.equal(ruleExcludes(objects, write({ namespace: "team-a", name: "db-cache" })), "object");
    assert.equal(ruleExcludes(objects, write({ namespace: "team-b", name: "db-cache" })), undefined);
    assert.equal(ruleExcludes(objects, write({ namespace: "team-a", name: "db-cache-2" })), undefined);
    assert.equal(globOf("a.b").test("axb"), false, "only * is special");
    assert.equal(globOf("system:*").test("system:controller:x"), true);
  });

  it("a collection several rule objects select keeps a write out only when every one of them does", () => {
    const bots = rule({ excludeFieldManagers: ["image-bot"] });
    const objects = rule({ excludeObjects: ["settings"] });
    const byBot = write({ writers: ["image-bot"] });
    assert.equal(excludedBy([bots], byBot), "field_manager");
    assert.equal(
      excludedBy([bots, undefined], byBot),
      undefined,
      "another rule selects it, excluding nothing",
    );
    assert.equal(excludedBy([bots, objects], byBot), "field_manager");
    assert.equal(excludedBy([bots, objects], write({ writers: ["kubectl"] })), undefined);
    assert.equal(excludedBy([], byBot), undefined);
  });

  it("a rule object that names nothing compiles to no exclusions", () => {
    assert.equal(compileExclusions({}), undefined);
    assert.equal(compileExclusions({ excludeFieldManagers: [], excludeObjects: [] }), undefined);
  });
});

describe("who to ignore: the watch's order names the writer of each write", () => {
  it("a write by an excluded field manager is kept out; the next write by anyone else is not", () => {
    const exclusions = new CollectionExclusions([rule({ excludeFieldManagers: ["image-bot"] })]);
    const writes = new LastWrites();
    const created = configMap(1, "settings", entry("kubectl", 1, { "f:data": { "f:k": {} } }));
    writes.record("shop/settings", created);
    const byBot = configMap(
      2,
      "settings",
      entry("kubectl", 1, { "f:data": { "f:k": {} } }),
      entry("image-bot", 4, { "f:data": { "f:image": {} } }),
    );
    assert.equal(exclusions.judge(byBot, writes.observe("shop/settings", byBot))?.reason, "field_manager");
    // kubectl writes again in a later second: its entry's time is the one that moved.
    const byHuman = configMap(
      3,
      "settings",
      entry("kubectl", 6, { "f:data": { "f:k": {} } }),
      entry("image-bot", 4, { "f:data": { "f:image": {} } }),
    );
    assert.equal(exclusions.judge(byHuman, writes.observe("shop/settings", byHuman))?.reason, undefined);
  });

  it("excludeObjects keeps an object out whatever its write, and a collection without exclusions judges nothing", () => {
    const exclusions = new CollectionExclusions([rule({ excludeObjects: ["kube-root-ca.crt"] })]);
    assert.equal(exclusions.object(configMap(1, "kube-root-ca.crt")), true);
    assert.equal(exclusions.object(configMap(1, "settings")), false);
    const none = new CollectionExclusions([undefined]);
    assert.equal(none.object(configMap(1, "kube-root-ca.crt")), false);
    assert.equal(none.judge(configMap(1, "settings"), { known: "image-bot" }), undefined);
  });

  it("a new plan changing the objects kept out asks for a fresh snapshot; one changing only writers does not", () => {
    const exclusions = new CollectionExclusions([rule({ excludeObjects: ["a"] })]);
    assert.equal(exclusions.set([rule({ excludeObjects: ["a"], excludeFieldManagers: ["bot"] })]), false);
    assert.equal(exclusions.set([rule({ excludeObjects: ["a", "b"] })]), true);
    assert.equal(exclusions.set([undefined]), true);
  });
});

describe("who to ignore: the rule object", () => {
  const watchRule = (spec: Partial<WatchRule["spec"]>): WatchRule => ({
    apiVersion: "configbutler.ai/v1alpha3",
    kind: "WatchRule",
    metadata: { name: "r", namespace: "shop" },
    spec: { gitTargetRef: { name: "t" }, rules: [{ resources: ["configmaps"] }], ...spec },
  });
  const types: TypeRecord[] = [
    {
      group: "",
      version: "v1",
      resource: "configmaps",
      kind: "ConfigMap",
      namespaced: true,
      preferred: true,
      followability: { followable: true },
    } as unknown as TypeRecord,
  ];

  it("every item of a rule object carries its exclusions, and the plan gives each collection one entry per rule object", () => {
    const excluding = compileWatchRule(
      watchRule({
        excludeFieldManagers: ["image-bot"],
        rules: [{ resources: ["configmaps"] }, { apiGroups: [""], resources: ["configmaps"] }],
      }),
    );
    assert.ok(excluding.every((r) => r.exclusions?.fieldManagers.length === 1));
    const other = compileWatchRule(watchRule({})).map((r) => ({ ...r, origin: "WatchRule/shop/other" }));
    const alone = planCollections(excluding, types);
    assert.equal(
      alone.exclusions.get("/configmaps@shop?")?.length,
      1,
      "two items of one rule object: one entry",
    );
    const both = planCollections([...excluding, ...other], types);
    assert.deepEqual(
      both.exclusions.get("/configmaps@shop?")?.map((e) => e === undefined),
      [false, true],
    );
  });

  it("excludeUsers with attribution off is said in ExclusionsEffective, and a Ready rule turns Stalled", () => {
    assert.deepEqual(exclusionsEffective({ excludeUsers: ["alice"] }, true), {
      status: "True",
      reason: "Succeeded",
      message: "",
    });
    const off = exclusionsEffective({ excludeUsers: ["alice"] }, false);
    assert.equal(off.status, "False");
    assert.equal(off.reason, "AttributionOff");
    assert.match(off.message, /attribution is off/);
    const lookups = { sourceContexts: { attributing: false } } as Parameters<typeof withExclusions>[2];
    const ready = withExclusions(
      [...readyTrio("Succeeded", "ok", 1)],
      { excludeUsers: ["alice"] },
      lookups,
      1,
    );
    const find = (type: string) => ready.find((c) => c.type === type);
    assert.equal(find("Ready")?.status, "False");
    assert.equal(find("Ready")?.reason, "AttributionOff");
    assert.equal(find("Stalled")?.status, "True");
    assert.equal(find("ExclusionsEffective")?.status, "False");
    const pending = withExclusions(
      [...progressingTrio("Progressing", "not yet", 1)],
      { excludeUsers: ["alice"] },
      lookups,
      1,
    );
    assert.equal(
      pending.find((c) => c.type === "Ready")?.reason,
      "Progressing",
      "the first problem stays first",
    );
    const fine = withExclusions(
      [...readyTrio("Succeeded", "ok", 1)],
      { excludeFieldManagers: ["bot"] },
      lookups,
      1,
    );
    assert.equal(fine.find((c) => c.type === "Ready")?.status, "True");
    assert.equal(fine.find((c) => c.type === "ExclusionsEffective")?.status, "True");
  });
});
