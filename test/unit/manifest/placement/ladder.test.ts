import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import {
  placeNew,
  type FolderShape,
  type NewObject,
} from "../../../../internal/manifest/placement/ladder.ts";
import { addResourceEntry } from "../../../../internal/manifest/resources.ts";

const deployment: NewObject = {
  group: "apps",
  version: "v1",
  resource: "deployments",
  kind: "Deployment",
  namespace: "team-a",
  name: "api",
  sensitive: false,
};
const configMap: NewObject = {
  ...deployment,
  group: "",
  resource: "configmaps",
  kind: "ConfigMap",
  name: "app",
};
const secret: NewObject = { ...configMap, resource: "secrets", kind: "Secret", name: "db", sensitive: true };
const clusterRole: NewObject = {
  ...deployment,
  group: "rbac.authorization.k8s.io",
  resource: "clusterroles",
  kind: "ClusterRole",
  namespace: "",
  name: "view",
};

function folder(
  kustomizations: string[] = [],
  existing: string[] = [],
  targetPath = "clusters/dev",
): FolderShape {
  return { targetPath, kustomizations, existingFiles: new Set([...existing, ...kustomizations]) };
}

describe("declared placement", () => {
  const policy = {
    byType: { "apps/v1/deployments": "workloads/{name}.yaml" },
    default: "{namespace}/{kind}-{name}.yaml",
  };

  it("spec.placement templates win over both", () => {
    const oneRoot = folder(["clusters/dev/kustomization.yaml"]);
    assert.deepEqual(placeNew(deployment, policy, oneRoot), {
      path: "clusters/dev/workloads/api.yaml",
      source: "Declared",
      append: false,
    });
    assert.deepEqual(placeNew(configMap, policy, oneRoot), {
      path: "clusters/dev/team-a/ConfigMap-app.yaml",
      source: "Declared",
      append: false,
    });
  });

  it("matches byType on the exact group, version and resource, else uses default", () => {
    const other = { byType: { "apps/v1beta1/deployments": "old/{name}.yaml" }, default: "all/{name}.yaml" };
    assert.deepEqual(placeNew(deployment, other, folder()), {
      path: "clusters/dev/all/api.yaml",
      source: "Declared",
      append: false,
    });
  });

  it("keys a core type without a group segment", () => {
    const core = { byType: { "v1/configmaps": "config/{name}.yaml" } };
    assert.deepEqual(placeNew(configMap, core, folder()), {
      path: "clusters/dev/config/app.yaml",
      source: "Declared",
      append: false,
    });
  });

  it("adds no prefix when spec.path is the repository root", () => {
    assert.deepEqual(placeNew(configMap, { default: "{name}.yaml" }, folder([], [], ".")), {
      path: "app.yaml",
      source: "Declared",
      append: false,
    });
  });

  it("writes a sensitive object as .sops.yaml in place of .yaml or .yml, and keeps a .sops.yaml name", () => {
    const place = (template: string) => placeNew(secret, { default: template }, folder());
    assert.deepEqual(place("{name}.yaml"), {
      path: "clusters/dev/db.sops.yaml",
      source: "Declared",
      append: false,
    });
    assert.deepEqual(place("{name}.yml"), {
      path: "clusters/dev/db.sops.yaml",
      source: "Declared",
      append: false,
    });
    assert.deepEqual(place("{name}.sops.yaml"), {
      path: "clusters/dev/db.sops.yaml",
      source: "Declared",
      append: false,
    });
  });

  it("appends a plaintext object to an existing file and refuses a sensitive one with reason shared_file", () => {
    const bundle = { default: "{namespace}/bundle.yaml" };
    const shared = folder([], ["clusters/dev/team-a/bundle.yaml", "clusters/dev/team-a/bundle.sops.yaml"]);
    assert.deepEqual(placeNew(configMap, bundle, shared), {
      path: "clusters/dev/team-a/bundle.yaml",
      source: "Declared",
      append: true,
    });
    assert.deepEqual(placeNew(secret, bundle, shared), {
      refused: true,
      source: "Declared",
      reason: "shared_file",
      message:
        "clusters/dev/team-a/bundle.sops.yaml already holds a document; a sensitive resource is written only to a file of its own",
    });
  });

  it("never appends a plaintext object to an existing .sops.yaml file", () => {
    const encrypted = folder([], ["clusters/dev/secrets.sops.yaml"]);
    assert.deepEqual(placeNew(configMap, { default: "secrets.sops.yaml" }, encrypted), {
      refused: true,
      source: "Declared",
      reason: "shared_file",
      message:
        "clusters/dev/secrets.sops.yaml is an encrypted file; a plaintext document is never mixed into it",
    });
  });

  it("never appends a document to the kustomization a template names", () => {
    const oneRoot = folder(["clusters/dev/kustomization.yaml"]);
    assert.deepEqual(placeNew(configMap, { default: "kustomization.yaml" }, oneRoot), {
      refused: true,
      source: "Declared",
      reason: "shared_file",
      message: "clusters/dev/kustomization.yaml is a kustomization; a resource document is never added to it",
    });
  });
});

describe("the folder's one kustomize root", () => {
  it("a new object in a folder with one kustomization.yaml lands beside it and is listed in resources", () => {
    const placement = placeNew(configMap, undefined, folder(["clusters/dev/apps/kustomization.yaml"]));
    assert.deepEqual(placement, {
      path: "clusters/dev/apps/app-configmap.yaml",
      source: "KustomizeRoot",
      append: false,
      kustomization: { path: "clusters/dev/apps/kustomization.yaml", entry: "app-configmap.yaml" },
    });
    const kustomization = [
      "# Team A's applications",
      "apiVersion: kustomize.config.k8s.io/v1beta1",
      "kind: Kustomization",
      "resources:",
      "  - deployment.yaml # the API",
      "  # the worker comes next quarter",
      "  - service.yaml",
      "",
      "# keep images pinned",
      "images:",
      "  - name: api",
      "    newTag: 1.2.3",
      "",
    ].join("\n");
    assert.ok(!("refused" in placement) && placement.kustomization);
    assert.equal(
      addResourceEntry(kustomization, placement.kustomization.entry),
      [
        "# Team A's applications",
        "apiVersion: kustomize.config.k8s.io/v1beta1",
        "kind: Kustomization",
        "resources:",
        "  - deployment.yaml # the API",
        "  # the worker comes next quarter",
        "  - service.yaml",
        "  - app-configmap.yaml",
        "",
        "# keep images pinned",
        "images:",
        "  - name: api",
        "    newTag: 1.2.3",
        "",
      ].join("\n"),
    );
  });

  it("lists the file by its name alone at the repository root", () => {
    assert.deepEqual(placeNew(configMap, undefined, folder(["kustomization.yaml"], [], ".")), {
      path: "app-configmap.yaml",
      source: "KustomizeRoot",
      append: false,
      kustomization: { path: "kustomization.yaml", entry: "app-configmap.yaml" },
    });
  });

  it("names a sensitive object's file .sops.yaml", () => {
    assert.deepEqual(placeNew(secret, {}, folder(["clusters/dev/kustomization.yaml"])), {
      path: "clusters/dev/db-secret.sops.yaml",
      source: "KustomizeRoot",
      append: false,
      kustomization: { path: "clusters/dev/kustomization.yaml", entry: "db-secret.sops.yaml" },
    });
  });

  it("prefixes the namespace when the name is taken, _cluster for a cluster-scoped object", () => {
    const taken = folder(["clusters/dev/kustomization.yaml"], ["clusters/dev/app-configmap.yaml"]);
    assert.deepEqual(placeNew(configMap, undefined, taken), {
      path: "clusters/dev/team-a-app-configmap.yaml",
      source: "KustomizeRoot",
      append: false,
      kustomization: { path: "clusters/dev/kustomization.yaml", entry: "team-a-app-configmap.yaml" },
    });
    const roleTaken = folder(["clusters/dev/kustomization.yaml"], ["clusters/dev/view-clusterrole.yaml"]);
    assert.deepEqual(placeNew(clusterRole, undefined, roleTaken), {
      path: "clusters/dev/_cluster-view-clusterrole.yaml",
      source: "KustomizeRoot",
      append: false,
      kustomization: { path: "clusters/dev/kustomization.yaml", entry: "_cluster-view-clusterrole.yaml" },
    });
  });

  it("falls back to the built-in path when both names beside the kustomization are taken", () => {
    const bothTaken = folder(
      ["clusters/dev/kustomization.yaml"],
      ["clusters/dev/app-configmap.yaml", "clusters/dev/team-a-app-configmap.yaml"],
    );
    assert.deepEqual(placeNew(configMap, undefined, bothTaken), {
      path: "clusters/dev/team-a/configmaps/app.yaml",
      source: "BuiltIn",
      append: false,
    });
  });

  it("with two kustomizations it falls back to the built-in path", () => {
    const two = folder(["clusters/dev/a/kustomization.yaml", "clusters/dev/b/kustomization.yaml"]);
    assert.deepEqual(placeNew(deployment, undefined, two), {
      path: "clusters/dev/team-a/apps/deployments/api.yaml",
      source: "BuiltIn",
      append: false,
    });
  });
});

describe("the built-in fallback", () => {
  it("uses the built-in layout with no policy and no kustomization", () => {
    assert.deepEqual(placeNew(secret, undefined, folder()), {
      path: "clusters/dev/team-a/secrets/db.sops.yaml",
      source: "BuiltIn",
      append: false,
    });
  });

  it("appends a plaintext object to a file already at its built-in path and refuses a sensitive one", () => {
    const occupied = folder(
      [],
      ["clusters/dev/team-a/configmaps/app.yaml", "clusters/dev/team-a/secrets/db.sops.yaml"],
    );
    assert.deepEqual(placeNew(configMap, undefined, occupied), {
      path: "clusters/dev/team-a/configmaps/app.yaml",
      source: "BuiltIn",
      append: true,
    });
    assert.deepEqual(placeNew(secret, undefined, occupied), {
      refused: true,
      source: "BuiltIn",
      reason: "shared_file",
      message:
        "clusters/dev/team-a/secrets/db.sops.yaml already holds a document; a sensitive resource is written only to a file of its own",
    });
  });
});

describe("sensitivity as a write-safety classifier", () => {
  it("never appends a sensitive object and always names its file .sops.yaml, whatever the policy and folder", () => {
    const template = fc.constantFrom(
      "{name}.yaml",
      "{namespace}/all.yml",
      "bundle.yaml",
      "x/{kind}.sops.yaml",
    );
    const policy = fc.option(fc.record({ default: template }, { requiredKeys: [] }), { nil: undefined });
    const existing = fc.subarray([
      "p/db.sops.yaml",
      "p/team-a/all.sops.yaml",
      "p/bundle.sops.yaml",
      "p/x/Secret.sops.yaml",
      "p/db-secret.sops.yaml",
      "p/team-a-db-secret.sops.yaml",
      "p/team-a/secrets/db.sops.yaml",
    ]);
    const kustomizations = fc.subarray(["p/kustomization.yaml", "p/b/kustomization.yaml"]);
    fc.assert(
      fc.property(policy, existing, kustomizations, (p, files, roots) => {
        const placement = placeNew(secret, p, folder(roots, files, "p"));
        if ("refused" in placement) return;
        assert.equal(placement.append, false);
        assert.match(placement.path, /\.sops\.yaml$/);
        assert.ok(!files.includes(placement.path));
      }),
    );
  });
});
