import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { actorSignature, authorOf, unresolvedAuthor } from "../../../internal/attribution/author.ts";
import { accepted, factOf, factsByType, type AuditEvent } from "../../../internal/attribution/fact.ts";
import { FactIndex } from "../../../internal/attribution/factindex.ts";
import {
  collectionScopeWindowMs,
  coveredByCollection,
  creatorRungs,
  lookUp,
  resolve,
  type AttributionQuery,
} from "../../../internal/attribution/resolver.ts";
import { auditFactsCondition, routeHolder } from "../../../internal/kubeprovider/decide.ts";
import type { KubeProvider } from "../../../generated/v1alpha3/index.ts";

const route = "team-a.prod";
const scope = { route, group: "", resource: "configmaps" };

function event(overrides: Partial<AuditEvent> = {}): AuditEvent {
  return {
    auditID: "a1",
    stage: "ResponseComplete",
    verb: "update",
    requestURI: "/api/v1/namespaces/apps/configmaps/web",
    user: { username: "alice" },
    objectRef: { resource: "configmaps", namespace: "apps", name: "web", uid: "u1", apiGroup: "" },
    responseStatus: { code: 200 },
    responseObject: { metadata: { resourceVersion: "11", uid: "u1" } },
    stageTimestamp: "2026-12-01T10:00:00Z",
    ...overrides,
  };
}

const fact = (overrides: Partial<AuditEvent> = {}) => factOf(event(overrides), route)!;
/** bob deletes the object; the API server answers with it at resourceVersion 20, finalizers still holding it. */
const bobDeletes = () =>
  fact({
    verb: "delete",
    user: { username: "bob" },
    responseObject: { metadata: { resourceVersion: "20", uid: "u1" } },
  });
const query = (overrides: Partial<AttributionQuery> = {}): AttributionQuery => ({
  ...scope,
  namespace: "apps",
  name: "web",
  uid: "u1",
  resourceVersion: "11",
  removal: false,
  labels: { app: "web" },
  ...overrides,
});

describe("the accept gate: only a complete, successful, persisted write makes a fact", () => {
  it("takes a ResponseComplete update that succeeded", () => assert.equal(accepted(event()), true));
  it("refuses another stage, a read, a failure, a dry run, a status write, and a no-op", () => {
    assert.equal(accepted(event({ stage: "RequestReceived" })), false);
    assert.equal(accepted(event({ verb: "get" })), false);
    assert.equal(accepted(event({ responseStatus: { code: 409 } })), false);
    assert.equal(accepted(event({ requestURI: "/api/v1/namespaces/apps/configmaps/web?dryRun=All" })), false);
    assert.equal(accepted(event({ objectRef: { resource: "deployments", subresource: "status" } })), false);
    assert.equal(accepted(event({ requestObject: { metadata: { resourceVersion: "11" } } })), false);
  });
  it("takes /scale, which names who scaled the parent", () => {
    assert.equal(accepted(event({ objectRef: { resource: "deployments", subresource: "scale" } })), true);
  });
  it("one append per type per request, not per event", () => {
    const byType = factsByType([event(), event({ auditID: "a2" }), event({ verb: "get" })], route);
    assert.deepEqual([...byType.keys()], ["/configmaps"]);
    assert.equal(byType.get("/configmaps")!.length, 2);
  });
  it("a deletecollection becomes one collection fact with its selector and uid set", () => {
    const collection = fact({
      verb: "deletecollection",
      requestURI: "/api/v1/namespaces/apps/configmaps?labelSelector=app%3Dweb",
      objectRef: { resource: "configmaps", namespace: "apps" },
      responseObject: {
        kind: "ConfigMapList",
        items: [{ metadata: { uid: "u1" } }, { metadata: { uid: "u2" } }],
      },
    });
    assert.deepEqual(collection.collection, { labelSelector: "app=web", uids: ["u1", "u2"] });
  });
});

describe("the resolver takes the strongest evidence there is", () => {
  it("strong match: a fact for this uid and resourceVersion names the author", () => {
    const index = new FactIndex();
    index.apply(fact());
    const found = lookUp(index, query());
    assert.equal(found.tier, "exact");
    assert.equal("actor" in found && found.actor.username, "alice");
  });

  it("an exact-capable event never falls through to the uid of an older write", () => {
    const index = new FactIndex();
    index.apply(fact());
    assert.equal(lookUp(index, query({ resourceVersion: "12" })).tier, "absent");
  });

  it("a delete whose audit resourceVersion differs from the watch's is found by the sticky slot", () => {
    const index = new FactIndex();
    index.apply(bobDeletes());
    const found = lookUp(index, query({ resourceVersion: "21", removal: true }));
    assert.equal(found.tier, "delete_sticky");
    assert.equal("actor" in found && found.actor.username, "bob");
  });

  it("a finalizer patch after a delete does not overwrite the deleter", () => {
    const index = new FactIndex();
    index.apply(bobDeletes());
    index.apply(
      fact({
        verb: "patch",
        user: { username: "system:serviceaccount:kube-system:gc" },
        responseObject: { metadata: { resourceVersion: "20", uid: "u1" } },
      }),
    );
    const found = lookUp(index, query({ resourceVersion: "20", removal: true }));
    assert.equal("actor" in found && found.actor.username, "bob");
  });

  it("a removal is never credited to the object's last edit", () => {
    const index = new FactIndex();
    index.apply(fact());
    assert.equal(lookUp(index, query({ resourceVersion: "30", removal: true })).tier, "absent");
  });

  it("a collection delete is joined by its uid set", () => {
    const index = new FactIndex();
    index.apply(
      fact({
        verb: "deletecollection",
        user: { username: "carol" },
        objectRef: { resource: "configmaps", namespace: "apps" },
        responseObject: { kind: "ConfigMapList", items: [{ metadata: { uid: "u1" } }] },
      }),
    );
    assert.equal(
      lookUp(index, query({ resourceVersion: "40", removal: true })).tier,
      "deletecollection_body_uid",
    );
  });

  it("a collection delete with no uid set is joined by its scope: namespace, selector, window", () => {
    const index = new FactIndex();
    const at = new Date(Date.now() - 1_000).toISOString();
    index.apply(
      fact({
        verb: "deletecollection",
        user: { username: "carol" },
        requestURI: "/api/v1/namespaces/apps/configmaps?labelSelector=app%20in%20(web,api),!legacy",
        objectRef: { resource: "configmaps", namespace: "apps" },
        responseObject: undefined,
        stageTimestamp: at,
      }),
    );
    const removal = query({ resourceVersion: "40", removal: true });
    const found = lookUp(index, removal);
    assert.deepEqual(found.tier === "absent" ? found : [found.tier, found.actor.username], [
      "deletecollection_scope",
      "carol",
    ]);
    assert.equal(lookUp(index, { ...removal, labels: { app: "db" } }).tier, "absent", "outside its selector");
    assert.equal(lookUp(index, { ...removal, namespace: "other" }).tier, "absent", "another namespace");
    assert.equal(lookUp(index, query()).tier, "absent", "a write is never credited to a collection delete");
  });

  it("a collection delete's scope says nothing past its window, or where its uid set is the answer", () => {
    const collection = (overrides: Partial<AuditEvent>) =>
      fact({
        verb: "deletecollection",
        objectRef: { resource: "configmaps", namespace: "apps" },
        requestURI:
          "/api/v1/namespaces/apps/configmaps?labelSelector=app%3Dweb&fieldSelector=metadata.name%3Dweb",
        responseObject: undefined,
        ...overrides,
      });
    const removal = query({ resourceVersion: "40", removal: true });
    const recent = new Date().toISOString();
    assert.equal(coveredByCollection(collection({ stageTimestamp: recent }), removal), true);
    assert.equal(
      coveredByCollection(collection({ stageTimestamp: recent }), { ...removal, name: "api" }),
      false,
      "its field selector names another object",
    );
    const old = new Date(Date.now() - collectionScopeWindowMs - 1_000).toISOString();
    assert.equal(coveredByCollection(collection({ stageTimestamp: old }), removal), false);
    const listed = collection({
      stageTimestamp: recent,
      responseObject: { kind: "ConfigMapList", items: [{ metadata: { uid: "u9" } }] },
    });
    assert.equal(coveredByCollection(listed, removal), false, "u1 is not in the set the API server returned");
    const unreadable = collection({
      stageTimestamp: recent,
      requestURI: "/api/v1/namespaces/apps/configmaps?labelSelector=app%3D(web",
    });
    assert.equal(coveredByCollection(unreadable, removal), false);
  });

  it("an aggregated-API-style fact with only a name answers by name", () => {
    const index = new FactIndex();
    index.apply(
      fact({ objectRef: { resource: "configmaps", namespace: "apps", name: "web" }, responseObject: {} }),
    );
    assert.equal(lookUp(index, query()).tier, "name");
  });

  it("an expired fact is never joined, whether or not it was swept", () => {
    let now = 0;
    const index = new FactIndex({ ttlMs: 1000, perType: 10, total: 10 }, () => now);
    index.apply(fact());
    now = 1001;
    assert.equal(lookUp(index, query()).tier, "absent");
  });

  it("a late fact wakes the waiting event inside the grace; a missing one ends at the grace", async () => {
    const index = new FactIndex();
    const waiting = resolve(index, query(), 2_000);
    index.apply(fact());
    assert.equal((await waiting).tier, "exact");
    const started = Date.now();
    assert.equal((await resolve(index, query({ uid: "u9" }), 50)).tier, "absent");
    assert.ok(Date.now() - started >= 45);
  });

  it("the index is capped per type, oldest first", () => {
    const index = new FactIndex({ ttlMs: 60_000, perType: 2, total: 10 });
    for (const uid of ["a", "b", "c"])
      index.apply(
        fact({
          objectRef: { resource: "configmaps", uid },
          responseObject: { metadata: { resourceVersion: "1" } },
        }),
      );
    assert.equal(lookUp(index, query({ uid: "c", resourceVersion: "1" })).tier, "exact");
    assert.equal(lookUp(index, query({ uid: "a", resourceVersion: "1" })).tier, "absent");
  });
});

describe("commit identities", () => {
  it("a service account is named by its username, with a derived email", () => {
    assert.deepEqual(actorSignature({ username: "system:serviceaccount:flux-system:kustomize-controller" }), {
      name: "system:serviceaccount:flux-system:kustomize-controller",
      email: "systemserviceaccountflux-systemkustomize-controller@noreply.cluster.local",
    });
  });
  it("an OIDC user's display name and email come from the two user.extra keys", () => {
    const extra = {
      "configbutler.ai/claims/display-name": ["Alice Doe"],
      "configbutler.ai/claims/email": ["alice@example.com"],
    };
    assert.deepEqual(actorSignature({ username: "alice@example.com", extra }), {
      name: "Alice Doe",
      email: "alice@example.com",
    });
  });
  it("impersonation: the write is the impersonated identity's", () => {
    const impersonated = fact({
      user: { username: "admin" },
      impersonatedUser: { username: "system:serviceaccount:apps:deployer" },
    });
    assert.equal(impersonated.actor.username, "system:serviceaccount:apps:deployer");
  });
  it("attribution that did not resolve is the explicit sentinel, never a person", () => {
    assert.deepEqual(authorOf({ tier: "absent" }), { ...unresolvedAuthor, kind: "none" });
  });
});

describe("AuditFactsReceived: Unknown until the audit route delivers a fact", () => {
  it("is Unknown (NoFactsYet) before the first fact, saying where to point the webhook, then True", () => {
    const before = auditFactsCondition("team-a.prod", undefined, 2);
    assert.equal(before.status, "Unknown");
    assert.equal(before.reason, "NoFactsYet");
    assert.match(before.message, /\/audit-webhook\/team-a\.prod/);
    assert.equal(auditFactsCondition("team-a.prod", new Date(), 2).status, "True");
  });
});

describe("an audit route is held by one namespace", () => {
  const provider = (namespace: string, name: string, created: string, auditRoute?: string) =>
    ({
      apiVersion: "configbutler.ai/v1alpha3",
      kind: "KubeProvider",
      metadata: { namespace, name, uid: `${namespace}-${name}`, creationTimestamp: created },
      spec: { inCluster: {}, ...(auditRoute ? { attribution: { auditRoute } } : {}) },
    }) as unknown as KubeProvider;

  it("the namespace its first segment names, when a provider there carries it", () => {
    const providers = [
      provider("team-b", "x", "2026-01-01T00:00:00Z", "team-a.prod"),
      provider("team-a", "prod", "2026-02-01T00:00:00Z"),
    ];
    assert.equal(routeHolder("team-a.prod", providers), "team-a");
  });

  it("else the oldest carrier's namespace; another namespace's provider is in conflict", () => {
    const providers = [
      provider("team-c", "late", "2026-03-01T00:00:00Z", "shared"),
      provider("team-b", "early", "2026-01-01T00:00:00Z", "shared"),
    ];
    assert.equal(routeHolder("shared", providers), "team-b");
  });
});

describe("a CommitRequest's author is the fact of the write that created it", () => {
  const requests = { route, group: "configbutler.ai", resource: "commitrequests" };
  const requestFact = (verb: string, username: string, code = 200) =>
    fact({
      verb,
      user: { username },
      responseStatus: { code },
      objectRef: { resource: "commitrequests", apiGroup: "configbutler.ai", namespace: "apps", name: "save" },
      responseObject: { metadata: { resourceVersion: verb === "create" ? "5" : "6", uid: "r1" } },
    });
  const ask = (index: FactIndex) =>
    resolve(
      index,
      { ...query(), ...requests, name: "save", uid: "r1", resourceVersion: "" },
      0,
      creatorRungs("r1"),
    );

  it("a create, or an apply answered 201 Created, names the creator; a later write never does", async () => {
    const index = new FactIndex();
    index.apply(requestFact("create", "alice"));
    index.apply(requestFact("patch", "bob"));
    const found = await ask(index);
    assert.equal(found.tier === "created" && found.actor.username, "alice");

    const applied = new FactIndex();
    applied.apply(requestFact("patch", "carol", 201));
    const byApply = await ask(applied);
    assert.equal(byApply.tier !== "absent" && byApply.actor.username, "carol");
  });

  it("a request no create fact names is unresolved, whoever wrote it since", async () => {
    const index = new FactIndex();
    index.apply(requestFact("patch", "bob"));
    assert.equal((await ask(index)).tier, "absent");
  });
});

describe("exactly one request made each resourceVersion", () => {
  /** alice's no-op, answered with bob's version 11, finishing after bob's edit. */
  const bobEdits = () =>
    fact({ auditID: "bob", user: { username: "bob" }, stageTimestamp: "2026-12-01T10:00:00.100Z" });
  const aliceNoop = () => fact({ auditID: "alice", stageTimestamp: "2026-12-01T10:00:00.300Z" });
  const actorOf = (index: FactIndex, q = query()) => {
    const found = lookUp(index, q);
    return "actor" in found ? found.actor.username : found.tier;
  };

  it("a no-op heard after the write that made the version is dropped, and counted", () => {
    const dropped: string[] = [];
    const index = new FactIndex(undefined, undefined, (f) => dropped.push(f.auditID));
    index.apply(bobEdits());
    index.apply(aliceNoop());
    assert.equal(actorOf(index), "bob");
    assert.equal(index.get(scope, { kind: "uid", uid: "u1" })?.actor.username, "bob", "nor the uid's slot");
    assert.deepEqual(dropped, ["alice"]);
  });

  it("a no-op heard before the write that made the version gives way to it", () => {
    const dropped: string[] = [];
    const index = new FactIndex(undefined, undefined, (f) => dropped.push(f.auditID));
    index.apply(aliceNoop());
    index.apply(bobEdits());
    assert.equal(actorOf(index), "bob");
    assert.equal(index.get(scope, { kind: "uid", uid: "u1" })?.actor.username, "bob");
    assert.deepEqual(dropped, ["alice"]);
  });

  it("the same fact heard twice, as a replay delivers it, is no no-op", () => {
    const dropped: string[] = [];
    const index = new FactIndex(undefined, undefined, (f) => dropped.push(f.auditID));
    index.apply(bobEdits());
    index.apply(bobEdits());
    assert.equal(actorOf(index), "bob");
    assert.deepEqual(dropped, []);
  });

  it("a later write makes a version of its own, and names its author", () => {
    const index = new FactIndex();
    index.apply(bobEdits());
    index.apply(
      fact({
        auditID: "carol",
        user: { username: "carol" },
        responseObject: { metadata: { resourceVersion: "12", uid: "u1" } },
      }),
    );
    assert.equal(actorOf(index, query({ resourceVersion: "12" })), "carol");
    assert.equal(actorOf(index), "bob");
  });
});
