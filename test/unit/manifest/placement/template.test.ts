import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { builtInPath } from "../../../../internal/manifest/placement/builtin.ts";
import {
  renderTemplate,
  typeKey,
  type PlacementVariables,
} from "../../../../internal/manifest/placement/template.ts";

const deployment: PlacementVariables = {
  namespace: "team-a",
  group: "apps",
  version: "v1",
  resource: "deployments",
  kind: "Deployment",
  name: "api",
};
const configMap: PlacementVariables = {
  ...deployment,
  group: "",
  resource: "configmaps",
  kind: "ConfigMap",
  name: "app",
};
const clusterRole: PlacementVariables = {
  namespace: "",
  group: "rbac.authorization.k8s.io",
  version: "v1",
  resource: "clusterroles",
  kind: "ClusterRole",
  name: "view",
};

describe("placement templates", () => {
  it("replaces every variable with the object's identity", () => {
    assert.equal(
      renderTemplate("{namespace}/{group}/{version}/{resource}/{kind}/{name}.yaml", deployment),
      "team-a/apps/v1/deployments/Deployment/api.yaml",
    );
  });

  it("replaces a variable wherever it stands in a segment, as often as it appears", () => {
    assert.equal(renderTemplate("apps/{kind}-{name}.{name}.yml", deployment), "apps/Deployment-api.api.yml");
  });

  it("collapses the core group's segment instead of leaving an empty one", () => {
    assert.equal(renderTemplate("{group}/{resource}/{name}.yaml", configMap), "configmaps/app.yaml");
    assert.equal(renderTemplate("x/{group}/{name}.yaml", configMap), "x/app.yaml");
  });

  it("keeps the core group's empty value inside a segment that has other text", () => {
    assert.equal(renderTemplate("{group}{kind}/{name}.yaml", configMap), "ConfigMap/app.yaml");
  });

  it("uses _cluster as a cluster-scoped object's namespace", () => {
    assert.equal(
      renderTemplate("{namespace}/{kind}-{name}.yaml", clusterRole),
      "_cluster/ClusterRole-view.yaml",
    );
  });

  it("drops empty and '.' segments that the template itself spells", () => {
    assert.equal(renderTemplate("./a//{name}.yaml", deployment), "a/api.yaml");
  });

  it("spells the built-in layout exactly with {namespace}/{group}/{resource}/{name}.yaml", () => {
    for (const vars of [deployment, configMap, clusterRole]) {
      assert.equal(
        renderTemplate("{namespace}/{group}/{resource}/{name}.yaml", vars),
        builtInPath(".", vars, false),
      );
    }
  });

  it("never renders an empty segment, a leading slash or a trailing slash", () => {
    const piece = fc.constantFrom(
      "{namespace}",
      "{group}",
      "{version}",
      "{resource}",
      "{kind}",
      "{name}",
      "x",
      "-",
      "",
    );
    const template = fc
      .array(
        fc.array(piece, { maxLength: 3 }).map((parts) => parts.join("")),
        { maxLength: 4 },
      )
      .map((segments) => [...segments, "{name}.yaml"].join("/"));
    const value = fc.constantFrom("", "a", "b.c");
    const vars = fc.record({
      namespace: value,
      group: value,
      version: fc.constant("v1"),
      resource: fc.constant("things"),
      kind: fc.constant("Thing"),
      name: fc.constantFrom("n", "n.m"),
    });
    fc.assert(
      fc.property(template, vars, (t, v) => {
        const segments = renderTemplate(t, v).split("/");
        assert.ok(
          segments.every((segment) => segment !== "" && segment !== "."),
          t,
        );
      }),
    );
  });
});

describe("byType keys", () => {
  it("is group/version/resource, with no group segment for the core group", () => {
    assert.equal(typeKey("apps", "v1", "deployments"), "apps/v1/deployments");
    assert.equal(typeKey("", "v1", "configmaps"), "v1/configmaps");
  });
});
