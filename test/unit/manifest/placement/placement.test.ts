import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { builtInPath, isSensitive } from "../../../../internal/manifest/placement/builtin.ts";

describe("built-in placement", () => {
  it("puts a namespaced object at {path}/{namespace}/{group}/{resource}/{name}.yaml", () => {
    assert.equal(
      builtInPath(
        "clusters/prod",
        { group: "apps", resource: "deployments", namespace: "team-a", name: "api" },
        false,
      ),
      "clusters/prod/team-a/apps/deployments/api.yaml",
    );
  });

  it("leaves the group out for core resources", () => {
    assert.equal(
      builtInPath("p", { group: "", resource: "configmaps", namespace: "team-a", name: "app" }, false),
      "p/team-a/configmaps/app.yaml",
    );
  });

  it("uses _cluster for a cluster-scoped object", () => {
    assert.equal(
      builtInPath(
        "p",
        { group: "rbac.authorization.k8s.io", resource: "clusterroles", namespace: "", name: "view" },
        false,
      ),
      "p/_cluster/rbac.authorization.k8s.io/clusterroles/view.yaml",
    );
  });

  it("writes a sensitive object as .sops.yaml, and '.' is the repository root", () => {
    assert.equal(
      builtInPath(".", { group: "", resource: "secrets", namespace: "team-a", name: "db" }, true),
      "team-a/secrets/db.sops.yaml",
    );
  });

  it("treats core Secrets, and the types the flag adds, as sensitive", () => {
    assert.equal(isSensitive({ group: "", resource: "secrets" }), true);
    assert.equal(isSensitive({ group: "", resource: "configmaps" }), false);
    assert.equal(
      isSensitive({ group: "bitnami.com", resource: "sealedsecrets" }, ["sealedsecrets.bitnami.com"]),
      true,
    );
    assert.equal(isSensitive({ group: "", resource: "configmaps" }, ["configmaps"]), true);
  });
});
