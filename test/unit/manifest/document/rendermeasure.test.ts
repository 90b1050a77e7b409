import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import {
  formatPath,
  hasToken,
  keepTokens,
  measureRender,
  tokenPaths,
} from "../../../../internal/manifest/document/rendermeasure.ts";

const inGit = {
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "api", labels: { "app.kubernetes.io/instance": "api-${ENV}" } },
  spec: {
    replicas: 2,
    template: {
      spec: {
        containers: [
          { name: "api", image: "registry/${CLUSTER}/api:1.0", args: ["--region", "${REGION:=eu}"] },
        ],
      },
    },
  },
};

describe("substitution token detection", () => {
  it("recognises ${NAME}, a token inside other text, and both default forms", () => {
    for (const value of [
      "${CLUSTER}",
      "prefix-${ENV}-suffix",
      "${A:=x}",
      "${A:-x}",
      "$$${LITERAL_THEN_TOKEN}",
    ])
      assert.equal(hasToken(value), true, value);
  });

  it("does not take an escaped $${NAME}, a bare $NAME or plain braces for a token", () => {
    for (const value of ["$${ESCAPED}", "$CLUSTER", "{x}", "${}", "${1ABC}", "cost: $5", ""])
      assert.equal(hasToken(value), false, value);
  });

  it("finds every token-bearing value, in nested maps and arrays, and never a key or a non-string", () => {
    assert.deepEqual(tokenPaths(inGit), [
      ["metadata", "labels", "app.kubernetes.io/instance"],
      ["spec", "template", "spec", "containers", 0, "image"],
      ["spec", "template", "spec", "containers", 0, "args", 1],
    ]);
    assert.deepEqual(tokenPaths({ data: { "${KEY}": "plain", n: 3, t: true, z: null } }), []);
  });
});

describe("measuring the render against live", () => {
  it("reports a token that live carries substituted", () => {
    const live = structuredClone(inGit);
    live.spec.template.spec.containers[0]!.image = "registry/prod-eu/api:1.0";
    assert.deepEqual(measureRender(inGit, live), [
      {
        path: ["spec", "template", "spec", "containers", 0, "image"],
        rendered: "registry/${CLUSTER}/api:1.0",
        live: "registry/prod-eu/api:1.0",
      },
    ]);
  });

  it("is clean when live carries the token text itself", () => {
    assert.deepEqual(measureRender(inGit, structuredClone(inGit)), []);
  });

  it("never counts a field without a token, however different live is", () => {
    const live = structuredClone(inGit);
    live.spec.replicas = 7;
    live.spec.template.spec.containers[0]!.name = "renamed";
    live.spec.template.spec.containers[0]!.args[0] = "--zone";
    assert.deepEqual(measureRender(inGit, live), []);
  });

  it("measures tokens inside arrays and nested maps, a token path live lacks diverging as undefined", () => {
    const live = structuredClone(inGit);
    live.spec.template.spec.containers[0]!.args = ["--region"];
    live.metadata.labels["app.kubernetes.io/instance"] = "api-prod";
    assert.deepEqual(measureRender(inGit, live), [
      {
        path: ["metadata", "labels", "app.kubernetes.io/instance"],
        rendered: "api-${ENV}",
        live: "api-prod",
      },
      {
        path: ["spec", "template", "spec", "containers", 0, "args", 1],
        rendered: "${REGION:=eu}",
        live: undefined,
      },
    ]);
    assert.equal(measureRender(inGit, { kind: "Deployment" }).length, 3);
  });

  it("formats a path as a person reads it", () => {
    assert.equal(
      formatPath(["spec", "template", "spec", "containers", 0, "image"]),
      "spec.template.spec.containers[0].image",
    );
    assert.equal(
      formatPath(["metadata", "labels", "app.kubernetes.io/instance"]),
      'metadata.labels["app.kubernetes.io/instance"]',
    );
  });
});

describe("keeping tokens in a write", () => {
  it("puts the token back over its substituted value and leaves every other change", () => {
    const desired = structuredClone(inGit);
    desired.spec.replicas = 5;
    desired.spec.template.spec.containers[0]!.image = "registry/prod-eu/api:1.0";
    desired.spec.template.spec.containers[0]!.args[1] = "eu";
    const expected = structuredClone(inGit);
    expected.spec.replicas = 5;
    assert.deepEqual(keepTokens(inGit, desired), expected);
    assert.equal(
      desired.spec.template.spec.containers[0]!.image,
      "registry/prod-eu/api:1.0",
      "desired untouched",
    );
  });

  it("does not bring back a token-bearing field the write removed", () => {
    const desired = structuredClone(inGit);
    desired.spec.template.spec.containers[0]!.args = ["--region"];
    desired.metadata.labels = {} as typeof desired.metadata.labels;
    const expected = structuredClone(inGit);
    expected.spec.template.spec.containers[0]!.args = ["--region"];
    expected.metadata.labels = {} as typeof expected.metadata.labels;
    assert.deepEqual(keepTokens(inGit, desired), expected);
  });

  it("leaves a write that measures clean once its tokens are kept, for any substituted values", () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.string(), (cluster, region, env) => {
        const desired = structuredClone(inGit);
        desired.spec.template.spec.containers[0]!.image = `registry/${cluster}/api:1.0`;
        desired.spec.template.spec.containers[0]!.args[1] = region;
        desired.metadata.labels["app.kubernetes.io/instance"] = `api-${env}`;
        assert.deepEqual(measureRender(inGit, keepTokens(inGit, desired)), []);
      }),
    );
  });
});
