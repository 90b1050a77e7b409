import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { acceptFolder } from "../../../../internal/manifest/inventory/acceptance.ts";
import { fileFacts } from "../../../../internal/manifest/inventory/facts.ts";

const accept = (files: Record<string, string>) =>
  acceptFolder(Object.entries(files).map(([path, content]) => fileFacts(path, content)));

const features = (files: Record<string, string>) => accept(files)?.problems.map((p) => p.feature);

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
      ["patches:\n  - patch: |-\n      kind: Service\n      metadata: { name: x }\n", "inline patch"],
      ["patchesStrategicMerge:\n  - |-\n    apiVersion: v1\n    kind: Service\n", "inline patch"],
      [
        "patches:\n  - patch: |-\n      - op: remove\n        path: /spec\n    target: { kind: Service }\n",
        "JSON6902 patch",
      ],
      ["patches:\n  - path: p.yaml\n    options: { allowNameChange: true }\n", "patch that renames"],
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
      assert.equal(refusal?.problems.length, 1, body);
      assert.equal(refusal.problems[0]?.feature, feature, body);
      assert.equal(refusal.problems[0].path, path, body);
      assert.ok(refusal.message.startsWith(`${path} has ${feature}`), refusal.message);
    }
  });

  it("says in the message what would clear the refusal", () => {
    const path = "clusters/prod/apps/kustomization.yaml";
    const message = `${path} has secretGenerator, which the operator cannot manage safely; remove it to let the operator write this folder`;
    assert.deepEqual(accept({ [path]: `${header}secretGenerator: [{ name: db }]\n` }), {
      problems: [
        { path, feature: "secretGenerator", message, summary: `${path} has secretGenerator: remove it` },
      ],
      message,
    });
  });

  it("refuses a kustomize Component in a kustomization file as an unsupported kind", () => {
    const refusal = accept({
      "c/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n",
    });
    assert.equal(refusal?.problems[0]?.feature, "unsupported kustomization kind");
    assert.match(refusal.message, /\(Component in kustomize\.config\.k8s\.io\/v1alpha1\)/);
  });

  it("refuses a hash-suffixed configMapGenerator but accepts one with disableNameSuffixHash and no behavior", () => {
    const generator = "configMapGenerator:\n  - name: app\n    literals: [a=b]\n";
    assert.deepEqual(features({ "k/kustomization.yaml": `${header}${generator}` }), [
      "configMapGenerator with a hash suffix",
    ]);
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
    assert.deepEqual(features({ "a/x.yaml": "key: [\n" }), ["invalid YAML"]);
    assert.deepEqual(features({ "a/x.yaml": "settings:\n  debug: true\n" }), ["non-KRM document"]);
    assert.equal(accept({ "a/x.yaml": `${service}---\n` }), undefined);
  });

  it("names .gittargetignore as the way out for a file that is not a Kubernetes manifest", () => {
    for (const content of ["settings:\n  debug: true\n", "replicas: {{ .Values.replicas }}\n"]) {
      assert.match(accept({ "a/values.yaml": content })?.message ?? "", /list it in \.gittargetignore/);
    }
  });

  it("refuses a duplicate identity across two files, naming both", () => {
    assert.equal(
      accept({ "a/one.yaml": service, "a/two.yaml": service })?.message,
      "a/two.yaml has duplicate identity (Service/podinfo/podinfo, also in a/one.yaml), which the operator cannot manage safely; keep the object in one document only to let the operator write this folder",
    );
  });

  it("refuses a duplicate identity within one file", () => {
    const refusal = accept({ "a/all.yaml": `${service}---\n${service}` });
    assert.equal(refusal?.problems[0]?.feature, "duplicate identity");
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
    assert.deepEqual(features({ ...files, "o/kustomization.yaml": `${header}resources: [../b]\n` }), [
      "duplicate identity",
    ]);
  });

  it("lists every problem in path order, duplicates among them", () => {
    const refusal = accept({
      "z/bad.yaml": "key: [\n",
      "m/kustomization.yaml": `${header}namePrefix: x-\nsecretGenerator: [{ name: db }]\n`,
      "a/one.yaml": service,
      "a/two.yaml": service,
    });
    assert.deepEqual(
      refusal?.problems.map((p) => [p.path, p.feature]),
      [
        ["a/two.yaml", "duplicate identity"],
        ["m/kustomization.yaml", "secretGenerator"],
        ["m/kustomization.yaml", "namePrefix"],
        ["z/bad.yaml", "invalid YAML"],
      ],
    );
  });
});

describe("patches, classified by their content as kustomize does", () => {
  const helmRelease = `# Flux: the chart's values for this cluster
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: not-used   # a targeted patch's own name is ignored
spec:
  values:
    replicaCount: 2
`;
  const ops = "- op: replace\n  path: /spec/replicas\n  value: 2\n";

  it("a strategic-merge patch with a target selector is accepted", () => {
    const files = {
      "apps/kustomization.yaml": `${header}resources: [release.yaml]\npatches:\n  - path: values.yaml\n    target:\n      kind: HelmRelease\n`,
      "apps/release.yaml": helmRelease.replace("not-used", "podinfo"),
      "apps/values.yaml": helmRelease,
    };
    assert.equal(accept(files), undefined);
    assert.equal(
      accept({ ...files, "apps/values.yaml": helmRelease.replace("not-used", "podinfo") }),
      undefined,
      "a patch restating the identity it patches is not a second copy",
    );
  });

  it("a targeted patch file holding a JSON6902 op list is refused as one, naming the file", () => {
    const refusal = accept({
      "apps/kustomization.yaml": `${header}patches:\n  - path: ops.yaml\n    target: { kind: Deployment }\n`,
      "apps/ops.yaml": ops,
    });
    assert.deepEqual(
      refusal?.problems.map((p) => [p.path, p.feature]),
      [["apps/ops.yaml", "JSON6902 patch"]],
    );
    assert.match(refusal.message, /rewrite it as a strategic-merge patch file/);
  });

  it("an inline patch is JSON6902 when it is an op list, and otherwise an inline strategic-merge patch", () => {
    const inline = (patch: string) =>
      features({
        "k/kustomization.yaml": `${header}patches:\n  - target: { kind: Service }\n    patch: |-\n${patch.replace(/^/gm, "      ")}\n`,
      });
    assert.deepEqual(inline(ops), ["JSON6902 patch"]);
    assert.deepEqual(inline('[{"op": "remove", "path": "/spec"}]'), ["JSON6902 patch"]);
    assert.deepEqual(inline("kind: Service\nmetadata:\n  name: x\n"), ["inline patch"]);
  });

  it("refuses a targeted patch whose file the gate cannot read, since its content decides what it is", () => {
    const kustomization = `${header}patches:\n  - path: ../outside/ops.yaml\n    target: { kind: Deployment }\n  - path: ops.json\n    target: { kind: Service }\n`;
    assert.deepEqual(
      accept({ "k/kustomization.yaml": kustomization })?.problems.map((p) => p.message.split(",")[0]),
      [
        "k/kustomization.yaml has unreadable targeted patch (../outside/ops.yaml)",
        "k/kustomization.yaml has unreadable targeted patch (ops.json)",
      ],
    );
  });
});

describe("the refusal message", () => {
  const problems = (count: number) =>
    Object.fromEntries(
      Array.from({ length: count }, (_, i) => [
        `a/file-${String(i).padStart(2, "0")}.yaml`,
        "settings:\n  debug: true\n",
      ]),
    );

  it("a folder with three problems lists all three", () => {
    const message =
      accept({
        "a/kustomization.yaml": `${header}resources: [one.yaml]\nsecretGenerator: [{ name: db }]\n`,
        "a/one.yaml": service,
        "a/two.yaml": `${service}---\nsettings:\n  debug: true\n`,
      })?.message ?? "";
    assert.equal(
      message,
      "3 problems keep the operator from writing this folder; fix them in one commit: " +
        "1. a/kustomization.yaml has secretGenerator: remove it; " +
        "2. a/two.yaml has non-KRM document (document 1): give it apiVersion, kind and metadata.name, or remove it (or, if the file is not a Kubernetes manifest, list it in .gittargetignore); " +
        "3. a/two.yaml has duplicate identity (Service/podinfo/podinfo, also in a/one.yaml): keep the object in one document only",
    );
  });

  it("spells out five problems and counts the rest", () => {
    const refusal = accept(problems(12));
    assert.equal(refusal?.problems.length, 12);
    assert.match(refusal.message, /^12 problems keep/);
    assert.match(refusal.message, /5\. a\/file-04\.yaml has non-KRM document/);
    assert.doesNotMatch(refusal.message, /6\. /);
    assert.match(refusal.message, /; and 7 more$/);
  });
});
