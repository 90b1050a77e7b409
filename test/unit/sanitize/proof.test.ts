import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { dryRunBody, proofKey, provenDefaults, verdictOf } from "../../../internal/sanitize/proof.ts";
import { settle, unsettled, type KubeObject } from "../../../internal/sanitize/sanitize.ts";

// A Secret as `kubectl apply --server-side` of a stringData manifest leaves it: the manager owns
// stringData, which the API server stored as data; type was defaulted.
function stringDataSecret(): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: "db",
      namespace: "shop",
      managedFields: [
        {
          manager: "kubectl",
          operation: "Apply",
          fieldsType: "FieldsV1",
          fieldsV1: { "f:stringData": { "f:username": {}, "f:password": {} } },
        },
      ],
    },
    data: { username: "YWRtaW4=", password: "czNjcjN0" },
    type: "Opaque",
  };
}

// What the API server answers a dry-run create of the Secret without its unowned values.
const secretAnswer = { apiVersion: "v1", kind: "Secret", metadata: { name: "db-x7k2p" }, type: "Opaque" };

function appliedService(name: string, selector: string, port = 80): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name,
      namespace: "shop",
      labels: { app: selector },
      managedFields: [
        {
          manager: "flux",
          operation: "Apply",
          fieldsType: "FieldsV1",
          fieldsV1: {
            "f:metadata": { "f:labels": { "f:app": {} } },
            "f:spec": {
              "f:selector": {},
              "f:ports": { [`k:{"port":${port},"protocol":"TCP"}`]: { ".": {}, "f:port": {} } },
            },
          },
        },
      ],
    },
    spec: {
      selector: { app: selector },
      ports: [{ port, protocol: "TCP", targetPort: port }],
      sessionAffinity: "None",
      type: "ClusterIP",
    },
  };
}

describe("an unowned value is left out only when the API server puts back the same value", () => {
  it("a Secret written through stringData keeps every key of its data", () => {
    const secret = unsettled(stringDataSecret());
    const { object, defaulted } = settle(secret, verdictOf(provenDefaults(secret, secretAnswer)));
    assert.deepEqual(object.data, { username: "YWRtaW4=", password: "czNjcjN0" });
    assert.equal(object.type, undefined, "type: Opaque is what the server puts back");
    assert.deepEqual(defaulted, { values: { type: "Opaque" } });
  });

  it("the dry-run is sent the object without its unowned values, under a generated name", () => {
    const body = dryRunBody(unsettled(stringDataSecret()));
    assert.deepEqual(body, {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { namespace: "shop", generateName: "db-" },
    });
  });

  it("a value the answer holds differently is kept", () => {
    const service = unsettled(appliedService("web", "web"));
    const answer = {
      spec: { ports: [{ port: 80, protocol: "TCP", targetPort: 80 }], sessionAffinity: "ClientIP" },
    };
    const { object } = settle(service, verdictOf(provenDefaults(service, answer)));
    const spec = object.spec as Record<string, unknown>;
    assert.equal(spec.sessionAffinity, "None", "not what the server would put back");
    assert.equal(spec.type, "ClusterIP", "absent from the answer");
    assert.deepEqual(spec.ports, [{ port: 80 }], "targetPort: 80 and protocol: TCP are put back");
  });

  it("an unowned list item is proven only when the answer adds an equal one", () => {
    const live: KubeObject = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {
        name: "c",
        finalizers: ["example.com/keep", "example.com/injected", "example.com/lost"],
        managedFields: [
          {
            fieldsType: "FieldsV1",
            fieldsV1: { "f:metadata": { "f:finalizers": { 'v:"example.com/keep"': {} } } },
          },
        ],
      },
    };
    const object = unsettled(live);
    const answer = { metadata: { finalizers: ["example.com/keep", "example.com/injected"] } };
    const { object: projected } = settle(object, verdictOf(provenDefaults(object, answer)));
    assert.deepEqual(projected.metadata?.finalizers, ["example.com/keep", "example.com/lost"]);
  });
});

describe("one dry-run proves every object of the same kind and shape", () => {
  it("objects that differ in name and label values share a key", () => {
    assert.equal(
      proofKey(unsettled(appliedService("web", "web"))),
      proofKey(unsettled(appliedService("api", "api"))),
    );
  });

  it("a number, a value beside an unowned one, or an unowned value gives another key", () => {
    const base = proofKey(unsettled(appliedService("web", "web")));
    assert.notEqual(proofKey(unsettled(appliedService("web", "web", 8080))), base);
    const otherDefault = appliedService("web", "web");
    (otherDefault.spec as Record<string, unknown>).sessionAffinity = "ClientIP";
    assert.notEqual(proofKey(unsettled(otherDefault)), base);
    const otherNamespace = appliedService("web", "web");
    otherNamespace.metadata!.namespace = "other";
    assert.notEqual(proofKey(unsettled(otherNamespace)), base);
  });

  it("the key holds no value of the object", () => {
    const key = proofKey(unsettled(stringDataSecret()));
    assert.equal(key.includes("czNjcjN0"), false);
    assert.match(key, /^[A-Za-z0-9+/]+=*$/);
  });
});
