import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { acceptFolder } from "../../../internal/manifest/acceptance.ts";
import { fileFacts } from "../../../internal/manifest/facts.ts";

const accept = (files: Record<string, string>) =>
  acceptFolder(Object.entries(files).map(([path, content]) => fileFacts(path, content)));

const header = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n";

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
  namespace: podinfo
spec:
  selector:
    matchLabels: { app: podinfo }
  template:
    metadata:
      labels: { app: podinfo }
    spec:
      containers:
        - name: podinfo
          image: ghcr.io/stefanprodan/podinfo:6.5.0
`;

const service = `apiVersion: v1
kind: Service
metadata:
  name: podinfo
  namespace: podinfo
spec:
  selector: { app: podinfo }
  ports: [{ port: 9898 }]
`;

// A Flux example layout: a base, and a production overlay that patches it.
const fluxApps = {
  "apps/base/podinfo/kustomization.yaml": `${header}resources:\n  - deployment.yaml\n  - service.yaml\n`,
  "apps/base/podinfo/deployment.yaml": deployment,
  "apps/base/podinfo/service.yaml": service,
  "apps/production/kustomization.yaml": `${header}namespace: podinfo
resources:
  - ../base/podinfo
images:
  - name: ghcr.io/stefanprodan/podinfo
    newTag: 6.7.0
replicas:
  - name: podinfo
    count: 3
patches:
  - path: podinfo-values.yaml
`,
  "apps/production/podinfo-values.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
  namespace: podinfo
spec:
  template:
    spec:
      containers:
        - name: podinfo
          resources: { limits: { memory: 256Mi } }
`,
  "apps/production/.sops.yaml": "creation_rules:\n  - age: age1example\n",
};

describe("folder acceptance", () => {
  it("accepts a Flux apps/ tree of a base and an overlay with images, replicas and a path-based patch", () => {
    assert.equal(accept(fluxApps), undefined);
  });

  it("refuses each unsupported kustomization feature, naming the feature and the file", () => {
    const cases: [string, string][] = [
      ["secretGenerator:\n  - name: db\n    literals: [a=b]\n", "secretGenerator"],
      ["configMapGenerator:\n  - name: app\n    literals: [a=b]\n", "configMapGenerator with a hash suffix"],
      [
        "configMapGenerator:\n  - name: app\n    behavior: merge\n    options: { disableNameSuffixHash: true }\n",
        "merging configMapGenerator",
      ],
      [
        "configMapGenerator:\n  - name: app\n    behavior: replace\n    options: { disableNameSuffixHash: true }\n",
        "merging configMapGenerator",
      ],
      ["patches:\n  - patch: |-\n      - op: remove\n        path: /spec\n", "inline patch"],
      ["patchesStrategicMerge:\n  - |-\n    apiVersion: v1\n    kind: Service\n", "inline patch"],
      ["patches:\n  - path: ops.yaml\n    target: { kind: Deployment }\n", "JSON6902 patch"],
      ["patchesJson6902:\n  - path: ops.yaml\n    target: { kind: Deployment, name: x }\n", "JSON6902 patch"],
      ["components: [../components/monitoring]\n", "components"],
      ["helmCharts:\n  - name: redis\n    repo: https://charts.example\n", "helmCharts"],
      ["helmGlobals: { chartHome: charts }\n", "helmGlobals"],
      ["replacements:\n  - path: replacement.yaml\n", "replacements"],
      ["transformers: [labels.yaml]\n", "transformers"],
      ["generators: [generator.yaml]\n", "generators"],
      ["namePrefix: prod-\n", "namePrefix"],
      ["nameSuffix: -v2\n", "nameSuffix"],
      ["resources: [https://example.com/manifest.yaml]\n", "remote base"],
      ["resources: [github.com/org/repo//deploy]\n", "remote base"],
      ["resources: [git@github.com:org/repo.git]\n", "remote base"],
      ["bases: [../shared?ref=v1.0.0]\n", "remote base"],
      ["images:\n  - name: podinfo\n", "malformed images entry"],
      ["replicas:\n  - name: podinfo\n    count: many\n", "malformed replicas entry"],
    ];
    for (const [body, feature] of cases) {
      const path = "clusters/prod/apps/kustomization.yaml";
      const refusal = accept({ [path]: `${header}${body}`, "clusters/prod/apps/cm.yaml": "" });
      assert.equal(refusal?.feature, feature, body);
      assert.equal(refusal.path, path, body);
      assert.ok(refusal.message.startsWith(`${path} has ${feature}`), refusal.message);
    }
  });

  it("says in the message what would clear the refusal", () => {
    assert.deepEqual(
      accept({ "clusters/prod/apps/kustomization.yaml": `${header}secretGenerator: [{ name: db }]\n` }),
      {
        path: "clusters/prod/apps/kustomization.yaml",
        feature: "secretGenerator",
        message:
          "clusters/prod/apps/kustomization.yaml has secretGenerator, which the operator cannot manage safely; remove it to let the operator write this folder",
      },
    );
  });

  it("refuses a kustomize Component in a kustomization file as an unsupported kind", () => {
    const refusal = accept({
      "c/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n",
    });
    assert.equal(refusal?.feature, "unsupported kustomization kind");
    assert.match(refusal.message, /\(Component in kustomize\.config\.k8s\.io\/v1alpha1\)/);
  });

  it("refuses a hash-suffixed configMapGenerator but accepts one with disableNameSuffixHash and no behavior", () => {
    const generator = "configMapGenerator:\n  - name: app\n    literals: [a=b]\n";
    assert.equal(
      accept({ "k/kustomization.yaml": `${header}${generator}` })?.feature,
      "configMapGenerator with a hash suffix",
    );
    assert.equal(
      accept({
        "k/kustomization.yaml": `${header}${generator}    options:\n      disableNameSuffixHash: true\n`,
      }),
      undefined,
    );
    assert.equal(
      accept({
        "k/kustomization.yaml": `${header}generatorOptions: { disableNameSuffixHash: true }\n${generator}`,
      }),
      undefined,
    );
  });

  it("refuses a configMapGenerator when any one entry keeps its hash suffix", () => {
    const body = `${header}configMapGenerator:
  - name: one
    options: { disableNameSuffixHash: true }
  - name: two
`;
    assert.match(accept({ "k/kustomization.yaml": body })?.message ?? "", /hash suffix \(entry 1\)/);
  });

  it("ignores an empty value of a refused key, which changes nothing kustomize emits", () => {
    assert.equal(accept({ "k/kustomization.yaml": `${header}namePrefix: ""\ncomponents: []\n` }), undefined);
  });

  it("refuses invalid YAML and a non-KRM document, but not an empty trailing document", () => {
    assert.equal(accept({ "a/x.yaml": "key: [\n" })?.feature, "invalid YAML");
    assert.equal(accept({ "a/x.yaml": "settings:\n  debug: true\n" })?.feature, "non-KRM document");
    assert.equal(accept({ "a/x.yaml": `${service}---\n` }), undefined);
  });

  it("refuses a duplicate identity across two files, naming both", () => {
    assert.deepEqual(accept({ "a/one.yaml": service, "a/two.yaml": service }), {
      path: "a/two.yaml",
      feature: "duplicate identity",
      message:
        "a/two.yaml has duplicate identity (Service/podinfo/podinfo, also in a/one.yaml), which the operator cannot manage safely; keep the object in one document only to let the operator write this folder",
    });
  });

  it("refuses a duplicate identity within one file", () => {
    const refusal = accept({ "a/all.yaml": `${service}---\n${service}` });
    assert.equal(refusal?.feature, "duplicate identity");
    assert.match(refusal.message, /\(Service\/podinfo\/podinfo, twice in this file\)/);
  });

  it("treats the same kind and name in different API groups or namespaces as different objects", () => {
    const other = service.replace("namespace: podinfo", "namespace: other");
    const knative = service.replace("apiVersion: v1", "apiVersion: serving.knative.dev/v1");
    assert.equal(accept({ "a/one.yaml": service, "a/two.yaml": other, "a/three.yaml": knative }), undefined);
  });

  it("does not count a strategic-merge patch file listed by a kustomization as a second copy", () => {
    const files = {
      "o/kustomization.yaml": `${header}resources: [../b]\npatchesStrategicMerge: [../b/patch.yaml]\n`,
      "b/deployment.yaml": deployment,
      "b/patch.yaml": deployment,
    };
    assert.equal(accept(files), undefined);
    assert.equal(
      accept({ ...files, "o/kustomization.yaml": `${header}resources: [../b]\n` })?.feature,
      "duplicate identity",
    );
  });

  it("reports the first refusal in path order, before any duplicate", () => {
    const refusal = accept({
      "z/bad.yaml": "key: [\n",
      "m/kustomization.yaml": `${header}namePrefix: x-\n`,
      "a/one.yaml": service,
      "a/two.yaml": service,
    });
    assert.equal(refusal?.path, "m/kustomization.yaml");
    assert.equal(refusal.feature, "namePrefix");
  });
});
