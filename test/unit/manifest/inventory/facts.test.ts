import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { fileFacts, isYamlPath, renderedFacts } from "../../../../internal/manifest/inventory/facts.ts";
import { contentDigest } from "../../../../internal/sanitize/digest.ts";
import { toStableYaml } from "../../../../internal/sanitize/stableyaml.ts";

const configMap = (name: string, extra = "") =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: apps\n${extra}`;

const tokensOf = (data: string) =>
  fileFacts("a/cm.yaml", configMap("cm", `data:\n  value: ${data}\n`)).documents[0]?.hasTokens;

const kustomization = (body: string) => fileFacts("apps/kustomization.yaml", body);

describe("file roles", () => {
  it("reads kustomization.yaml, kustomization.yml and Kustomization as kustomizations", () => {
    for (const path of ["a/kustomization.yaml", "a/kustomization.yml", "a/Kustomization"]) {
      assert.equal(fileFacts(path, "resources: []\n").role, "kustomization", path);
    }
  });

  it("retains .sops.yaml as auxiliary, unparsed and never a finding", () => {
    assert.deepEqual(fileFacts("a/.sops.yaml", "creation_rules: [\n"), {
      path: "a/.sops.yaml",
      role: "auxiliary",
      documents: [],
      findings: [],
    });
  });

  it("reads every other .yaml or .yml file, an encrypted one included, as a manifest", () => {
    assert.equal(fileFacts("a/db.sops.yaml", configMap("db")).role, "manifest");
    assert.equal(fileFacts("a/cm.yml", configMap("cm")).role, "manifest");
  });

  it("scans .yaml and .yml files and a Kustomization, nothing else", () => {
    assert.deepEqual(
      ["a/x.yaml", "a/x.yml", "a/Kustomization", "a/README.md", "a/.gittargetignore", "a/x.yaml.bak"].map(
        isYamlPath,
      ),
      [true, true, true, false, false, false],
    );
  });
});

describe("document facts", () => {
  it("gives each document of a multi-document file its position, empty documents counted", () => {
    const facts = fileFacts(
      "a/all.yaml",
      `${configMap("one")}---\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: view\n---\n`,
    );
    assert.deepEqual(facts, {
      path: "a/all.yaml",
      role: "manifest",
      documents: [
        {
          index: 0,
          apiVersion: "v1",
          kind: "ConfigMap",
          namespace: "apps",
          name: "one",
          key: "/ConfigMap/apps/one",
          labels: {},
          hasTokens: false,
          digest: contentDigest({
            apiVersion: "v1",
            kind: "ConfigMap",
            metadata: { name: "one", namespace: "apps" },
          }),
        },
        {
          index: 2,
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "ClusterRole",
          namespace: "",
          name: "view",
          key: "rbac.authorization.k8s.io/ClusterRole//view",
          labels: {},
          hasTokens: false,
          digest: contentDigest({
            apiVersion: "rbac.authorization.k8s.io/v1",
            kind: "ClusterRole",
            metadata: { name: "view" },
          }),
        },
      ],
      findings: [],
    });
  });

  it("keeps each document's labels as written, for a collection's selector, and only string values", () => {
    const facts = fileFacts(
      "a/cm.yaml",
      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\n  labels:\n    sel: a\n    n: 1\n",
    );
    assert.deepEqual(facts.documents[0]?.labels, { sel: "a" });
  });

  it("finds Flux substitution tokens ${VAR}, ${VAR:=default} and ${VAR:-default}", () => {
    assert.equal(tokensOf('"${CLUSTER}"'), true);
    assert.equal(tokensOf('"${VAR:=x}"'), true);
    assert.equal(tokensOf('"prefix-${VAR:-x}-suffix"'), true);
    assert.equal(tokensOf('"$$${VAR}"'), true);
  });

  it("does not count an escaped $${VAR}, a bare $VAR, or a plain string as a token", () => {
    assert.equal(tokensOf('"$${ESCAPED}"'), false);
    assert.equal(tokensOf('"$HOME"'), false);
    assert.equal(tokensOf("plain"), false);
    assert.equal(tokensOf('"${}"'), false);
  });

  it("finds a token in a nested value, not only at the top", () => {
    const facts = fileFacts(
      "a/d.yaml",
      "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\nspec:\n  template:\n    spec:\n      containers:\n        - image: api:${TAG}\n",
    );
    assert.equal(facts.documents[0]?.hasTokens, true);
  });
});

describe("per-file findings", () => {
  it("refuses invalid YAML, naming the line of the first error", () => {
    const facts = fileFacts("a/bad.yaml", `${configMap("one")}metadata:\n  name: two\n`);
    assert.deepEqual(facts.findings, [
      {
        path: "a/bad.yaml",
        feature: "invalid YAML",
        message:
          "a/bad.yaml has invalid YAML (Map keys must be unique at line 6, column 1), which the operator cannot manage safely; fix the YAML (or, if the file is not a Kubernetes manifest, list it in .gittargetignore) to let the operator write this folder",
        summary:
          "a/bad.yaml has invalid YAML (Map keys must be unique at line 6, column 1): fix the YAML (or, if the file is not a Kubernetes manifest, list it in .gittargetignore)",
      },
    ]);
    assert.deepEqual(facts.documents, []);
  });

  it("refuses an unclosed collection and an unresolved alias as invalid YAML", () => {
    assert.equal(fileFacts("a/x.yaml", "a: [\n").findings[0]?.feature, "invalid YAML");
    assert.equal(fileFacts("a/x.yaml", "a: *nowhere\n").findings[0]?.feature, "invalid YAML");
  });

  it("refuses a document without string apiVersion, kind and metadata.name as non-KRM", () => {
    const cases = [
      "plain: data\n",
      "kind: ConfigMap\nmetadata:\n  name: x\n",
      "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: 42\n",
      "just a string\n",
    ];
    for (const content of cases) {
      assert.deepEqual(
        fileFacts("a/x.yaml", content).findings.map((f) => [f.feature, f.path]),
        [["non-KRM document", "a/x.yaml"]],
        content,
      );
    }
  });

  it("names the non-KRM document's position and keeps the facts of the others", () => {
    const facts = fileFacts("a/x.yaml", `${configMap("one")}---\nplain: data\n`);
    assert.equal(
      facts.findings[0]?.message,
      "a/x.yaml has non-KRM document (document 1), which the operator cannot manage safely; give it apiVersion, kind and metadata.name, or remove it (or, if the file is not a Kubernetes manifest, list it in .gittargetignore) to let the operator write this folder",
    );
    assert.deepEqual(
      facts.documents.map((d) => d.name),
      ["one"],
    );
  });

  it("ignores an empty trailing document and a comment-only document", () => {
    assert.deepEqual(fileFacts("a/x.yaml", `${configMap("one")}---\n`).findings, []);
    assert.deepEqual(fileFacts("a/x.yaml", `${configMap("one")}---\n# nothing here\n`).findings, []);
    assert.deepEqual(fileFacts("a/x.yaml", "").findings, []);
  });
});

describe("kustomization facts", () => {
  it("records resources, bases, well-formed images and replicas with their index, and patch paths", () => {
    const facts = kustomization(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [../base/podinfo, namespace.yaml]
bases: [../common]
images:
  - name: podinfo
    newTag: 6.5.0
  - name: redis
    newName: registry.local/redis
    digest: sha256:abc
replicas:
  - name: podinfo
    count: 3
patches:
  - path: podinfo-patch.yaml
patchesStrategicMerge:
  - limits.yaml
`);
    assert.deepEqual(facts, {
      path: "apps/kustomization.yaml",
      role: "kustomization",
      documents: [],
      kustomization: {
        resources: ["../base/podinfo", "namespace.yaml", "../common"],
        images: [
          { index: 0, name: "podinfo", newTag: "6.5.0" },
          { index: 1, name: "redis", newName: "registry.local/redis", digest: "sha256:abc" },
        ],
        replicas: [{ index: 0, name: "podinfo", count: 3 }],
        patchPaths: ["podinfo-patch.yaml", "limits.yaml"],
        targetedPatchPaths: [],
      },
      findings: [],
    });
  });

  it("keeps a well-formed entry's own index when an earlier entry is malformed", () => {
    const facts = kustomization("images:\n  - name: bad\n  - name: good\n    newTag: v2\n");
    assert.deepEqual(facts.kustomization?.images, [{ index: 1, name: "good", newTag: "v2" }]);
    assert.deepEqual(
      facts.findings.map((f) => [f.feature, f.message.includes("(entry 0)")]),
      [["malformed images entry", true]],
    );
  });

  it("refuses malformed images entries", () => {
    const cases = [
      "images: [podinfo]\n",
      "images:\n  - newTag: v1\n",
      "images:\n  - name: podinfo\n",
      "images:\n  - name: podinfo\n    newTag: 1.5\n",
      "images:\n  - name: podinfo\n    newTag: v1\n    digest: null\n",
      "images: {name: podinfo, newTag: v1}\n",
    ];
    for (const body of cases) {
      assert.deepEqual(
        kustomization(body).findings.map((f) => f.feature),
        ["malformed images entry"],
        body,
      );
    }
  });

  it("refuses malformed replicas entries", () => {
    const cases = [
      "replicas: [podinfo]\n",
      "replicas:\n  - count: 2\n",
      "replicas:\n  - name: podinfo\n",
      "replicas:\n  - name: podinfo\n    count: -1\n",
      "replicas:\n  - name: podinfo\n    count: 1.5\n",
      'replicas:\n  - name: podinfo\n    count: "2"\n',
    ];
    for (const body of cases) {
      assert.deepEqual(
        kustomization(body).findings.map((f) => f.feature),
        ["malformed replicas entry"],
        body,
      );
    }
  });

  it("accepts zero replicas", () => {
    assert.deepEqual(kustomization("replicas:\n  - name: podinfo\n    count: 0\n").findings, []);
  });

  it("allows ../ resources and directories as read-only context", () => {
    const facts = kustomization("resources:\n  - ../../base\n  - ./apps/\n");
    assert.deepEqual(facts.findings, []);
    assert.deepEqual(facts.kustomization?.resources, ["../../base", "./apps/"]);
  });

  it("refuses a kustomization that is not a single map", () => {
    assert.equal(kustomization("- a\n- b\n").findings[0]?.feature, "invalid kustomization");
    assert.equal(
      kustomization("resources: []\n---\nresources: []\n").findings[0]?.feature,
      "invalid kustomization",
    );
  });

  it("treats an empty kustomization as one with nothing in it", () => {
    assert.deepEqual(kustomization("").kustomization, {
      resources: [],
      images: [],
      replicas: [],
      patchPaths: [],
      targetedPatchPaths: [],
    });
    assert.deepEqual(kustomization("").findings, []);
  });
});

describe("the facts of a file the writer rendered", () => {
  it("are the facts a parse of the rendered text finds, so a new file is never parsed again", () => {
    const value = fc.oneof(
      fc.string(),
      fc.constantFrom("${CLUSTER}", "prefix-${ENV:=dev}", "$${ESCAPED}", "yes", "0777", "a: b"),
      fc.integer(),
      fc.boolean(),
    );
    const object = fc.record({
      apiVersion: fc.constantFrom("v1", "apps/v1", "example.com/v1alpha1"),
      kind: fc.constantFrom("ConfigMap", "Deployment", "Widget"),
      metadata: fc.record(
        { name: fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/), namespace: fc.constantFrom("apps", "team-a") },
        { requiredKeys: ["name"] },
      ),
      data: fc.dictionary(fc.stringMatching(/^[a-z]{1,8}$/), value),
    });
    fc.assert(
      fc.property(object, (o) => {
        assert.deepEqual(renderedFacts("f/x.yaml", [o]), fileFacts("f/x.yaml", toStableYaml(o)));
      }),
      { numRuns: 300 },
    );
  });
});
