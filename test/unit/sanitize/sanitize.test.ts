import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parse } from "yaml";
import { AcceptedState } from "../../../internal/sanitize/accepted.ts";
import { sanitize, stripRules, type KubeObject } from "../../../internal/sanitize/sanitize.ts";
import { toStableYaml } from "../../../internal/sanitize/stableyaml.ts";

// What `kubectl apply` (client-side) sent, as it records it in last-applied-configuration.
const appliedManifest = {
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: {
    name: "web",
    namespace: "team-a",
    labels: { app: "web", tier: "frontend" },
    annotations: { "team.example.com/owner": "payments" },
  },
  spec: {
    replicas: 2,
    selector: { matchLabels: { app: "web" } },
    template: {
      metadata: { labels: { app: "web" } },
      spec: {
        containers: [
          { name: "web", image: "nginx:1.27", ports: [{ containerPort: 80 }] },
          { name: "sidecar", image: "envoy:1.31" },
        ],
      },
    },
  },
};

// A Deployment as a watch delivers it, after a kubectl apply and a rollout. The defaults are its
// state now; the controller's next status write moves only what `afterStatusWrite` passes.
function liveDeployment({
  resourceVersion = "48213",
  statusWrittenAt = "2026-11-29T10:01:00Z",
  readyReplicas = 2,
} = {}): KubeObject {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: {
      name: "web",
      namespace: "team-a",
      uid: "5b1e3c1a-8f1d-4a7e-9a51-2f0c6f1a9d10",
      resourceVersion,
      generation: 3,
      creationTimestamp: "2026-11-29T10:00:00Z",
      labels: { app: "web", tier: "frontend" },
      annotations: {
        "deployment.kubernetes.io/revision": "3",
        "kubectl.kubernetes.io/last-applied-configuration": `${JSON.stringify(appliedManifest)}\n`,
        "team.example.com/owner": "payments",
      },
      managedFields: [
        {
          manager: "kubectl-client-side-apply",
          operation: "Update",
          apiVersion: "apps/v1",
          time: "2026-11-29T10:00:00Z",
          fieldsType: "FieldsV1",
          fieldsV1: {
            "f:metadata": {
              "f:labels": { ".": {}, "f:app": {}, "f:tier": {} },
              "f:annotations": {
                ".": {},
                "f:kubectl.kubernetes.io/last-applied-configuration": {},
                "f:team.example.com/owner": {},
              },
            },
            "f:spec": {
              "f:replicas": {},
              "f:selector": {},
              "f:template": {
                "f:metadata": { "f:labels": { ".": {}, "f:app": {} } },
                "f:spec": {
                  "f:containers": {
                    'k:{"name":"web"}': {
                      ".": {},
                      "f:name": {},
                      "f:image": {},
                      "f:ports": {
                        ".": {},
                        'k:{"containerPort":80,"protocol":"TCP"}': { ".": {}, "f:containerPort": {} },
                      },
                    },
                    'k:{"name":"sidecar"}': { ".": {}, "f:name": {}, "f:image": {} },
                  },
                },
              },
            },
          },
        },
        {
          manager: "kubectl-rollout",
          operation: "Update",
          apiVersion: "apps/v1",
          time: "2026-11-29T09:58:00Z",
          fieldsType: "FieldsV1",
          fieldsV1: {
            "f:spec": {
              "f:template": {
                "f:metadata": { "f:annotations": { ".": {}, "f:kubectl.kubernetes.io/restartedAt": {} } },
              },
            },
          },
        },
        {
          manager: "kube-controller-manager",
          operation: "Update",
          apiVersion: "apps/v1",
          time: "2026-11-29T10:00:00Z",
          fieldsType: "FieldsV1",
          fieldsV1: { "f:metadata": { "f:annotations": { "f:deployment.kubernetes.io/revision": {} } } },
        },
        {
          manager: "kube-controller-manager",
          operation: "Update",
          apiVersion: "apps/v1",
          time: statusWrittenAt,
          fieldsType: "FieldsV1",
          fieldsV1: { "f:status": { "f:replicas": {} } },
          subresource: "status",
        },
      ],
    },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: "web" } },
      template: {
        metadata: {
          labels: { app: "web" },
          annotations: { "kubectl.kubernetes.io/restartedAt": "2026-11-29T09:58:00Z" },
        },
        spec: {
          containers: [
            { name: "web", image: "nginx:1.27", ports: [{ containerPort: 80 }] },
            { name: "sidecar", image: "envoy:1.31" },
          ],
        },
      },
    },
    status: {
      observedGeneration: 3,
      replicas: 2,
      readyReplicas,
      conditions: [{ type: "Available", status: "True", lastUpdateTime: statusWrittenAt }],
    },
  };
}

const afterStatusWrite = () =>
  liveDeployment({ resourceVersion: "48377", statusWrittenAt: "2026-11-29T10:02:00Z", readyReplicas: 1 });

function liveConfigMap(): KubeObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: "app-config",
      namespace: "team-a",
      uid: "0d5f6b0e-1c2d-4e5f-8a9b-0c1d2e3f4a5b",
      resourceVersion: "1200",
      creationTimestamp: "2026-11-29T10:00:00Z",
      annotations: {
        "kubectl.kubernetes.io/last-applied-configuration": '{"apiVersion":"v1","kind":"ConfigMap"}\n',
      },
    },
    data: { "app.properties": "mode=fast\nretries=3\n", enabled: "yes" },
  };
}

function liveService(clusterIP: string): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: "web", namespace: "team-a", uid: "9e8d7c6b-5a4f-4e3d-2c1b-0a9f8e7d6c5b" },
    spec: {
      type: "ClusterIP",
      clusterIP,
      clusterIPs: [clusterIP],
      ipFamilies: ["IPv4"],
      ipFamilyPolicy: "SingleStack",
      selector: { app: "web" },
      ports: [{ name: "http", port: 80, protocol: "TCP", targetPort: 8080 }],
    },
    status: { loadBalancer: {} },
  };
}

const configMap = (data: Record<string, string>): KubeObject => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  data,
});
const metadataOf = (object: KubeObject) => object.metadata ?? {};

describe("sanitize", () => {
  it("strips status, so a status-only update sanitizes to the same object", () => {
    assert.equal(sanitize(liveDeployment()).status, undefined);
    assert.deepEqual(sanitize(afterStatusWrite()), sanitize(liveDeployment()));
  });

  it("strips server-assigned metadata (uid, resourceVersion, generation, creationTimestamp, managedFields)", () => {
    const live = liveDeployment();
    Object.assign(live.metadata!, { selfLink: "/apis/apps/v1/namespaces/team-a/deployments/web" });
    assert.deepEqual(Object.keys(metadataOf(sanitize(live))).sort(), [
      "annotations",
      "labels",
      "name",
      "namespace",
    ]);
  });

  it("strips deletion bookkeeping (deletionTimestamp, deletionGracePeriodSeconds)", () => {
    const live = liveConfigMap();
    Object.assign(live.metadata!, {
      deletionTimestamp: "2026-11-29T11:00:00Z",
      deletionGracePeriodSeconds: 0,
      finalizers: ["example.com/cleanup"],
    });
    const metadata = metadataOf(sanitize(live));
    assert.equal(metadata.deletionTimestamp, undefined);
    assert.equal(metadata.deletionGracePeriodSeconds, undefined);
    assert.deepEqual(metadata.finalizers, ["example.com/cleanup"]);
  });

  it("strips ownerReferences, which name the live owner by UID", () => {
    const live = liveConfigMap();
    live.metadata!.ownerReferences = [
      { apiVersion: "apps/v1", kind: "Deployment", name: "web", uid: "5b1e3c1a-8f1d-4a7e-9a51-2f0c6f1a9d10" },
    ];
    assert.equal(metadataOf(sanitize(live)).ownerReferences, undefined);
  });

  it("drops generateName once the server has assigned a name, and keeps it while no name is set", () => {
    const assigned = liveConfigMap();
    Object.assign(assigned.metadata!, { name: "job-config-x7k2p", generateName: "job-config-" });
    assert.equal(metadataOf(sanitize(assigned)).generateName, undefined);

    const unnamed = liveConfigMap();
    Object.assign(unnamed.metadata!, { name: undefined, generateName: "job-config-" });
    assert.equal(metadataOf(sanitize(unnamed)).generateName, "job-config-");
  });

  it("drops the last-applied-configuration annotation but keeps user annotations", () => {
    assert.deepEqual(metadataOf(sanitize(liveDeployment())).annotations, {
      "team.example.com/owner": "payments",
    });
  });

  it("drops the Deployment controller's revision annotation but keeps kubectl's restartedAt, a user intent", () => {
    const projection = sanitize(liveDeployment());
    const annotations = metadataOf(projection).annotations as Record<string, string>;
    assert.equal(annotations["deployment.kubernetes.io/revision"], undefined);
    assert.match(toStableYaml(projection), /kubectl\.kubernetes\.io\/restartedAt: "2026-11-29T09:58:00Z"/);
  });

  it("drops the appliers' ownership stamps (Flux's owner labels, Argo CD's tracking-id) but keeps user labels", () => {
    const live = liveConfigMap();
    Object.assign(live.metadata!, {
      labels: {
        app: "web",
        "kustomize.toolkit.fluxcd.io/name": "apps",
        "kustomize.toolkit.fluxcd.io/namespace": "flux-system",
      },
      annotations: { "argocd.argoproj.io/tracking-id": "apps:/ConfigMap:team-a/app-config" },
    });
    const metadata = metadataOf(sanitize(live));
    assert.deepEqual(metadata.labels, { app: "web" });
    assert.equal(metadata.annotations, undefined);
  });

  it("removes an annotations map that stripping emptied", () => {
    assert.equal(metadataOf(sanitize(liveConfigMap())).annotations, undefined);
  });

  it("removes a labels map that stripping emptied, and an empty one it was given", () => {
    const live = liveConfigMap();
    Object.assign(live.metadata!, { labels: { "kustomize.toolkit.fluxcd.io/name": "apps" } });
    assert.equal(metadataOf(sanitize(live)).labels, undefined);
    Object.assign(live.metadata!, { labels: {} });
    assert.equal(metadataOf(sanitize(live)).labels, undefined);
  });

  it("keeps metadata.namespace of a namespaced object", () => {
    assert.equal(metadataOf(sanitize(liveConfigMap())).namespace, "team-a");
  });

  it("strips a Service's allocated clusterIP and clusterIPs, and keeps the rest of its spec", () => {
    assert.deepEqual(sanitize(liveService("10.96.14.7")).spec, {
      type: "ClusterIP",
      ipFamilies: ["IPv4"],
      ipFamilyPolicy: "SingleStack",
      selector: { app: "web" },
      ports: [{ name: "http", port: 80, protocol: "TCP", targetPort: 8080 }],
    });
  });

  it("keeps clusterIP None, which makes a Service headless", () => {
    const spec = sanitize(liveService("None")).spec as Record<string, unknown>;
    assert.equal(spec.clusterIP, "None");
    assert.deepEqual(spec.clusterIPs, ["None"]);
  });

  it("strips clusterIP only from core Services", () => {
    const custom = { ...liveService("10.96.14.7"), apiVersion: "example.com/v1" };
    assert.equal((sanitize(custom).spec as Record<string, unknown>).clusterIP, "10.96.14.7");
  });

  it("does not mutate its input", () => {
    const live = liveDeployment();
    sanitize(live);
    assert.deepEqual(live, liveDeployment());
  });

  it("is idempotent", () => {
    const once = sanitize(liveDeployment());
    assert.deepEqual(sanitize(once), once);
  });

  it("gives every strip rule a reason", () => {
    for (const rule of stripRules) assert.ok(rule.reason.length > 0, rule.path.join("."));
  });
});

describe("toStableYaml", () => {
  it("renders the same YAML whatever the input key order", () => {
    const reverse = (value: unknown): unknown =>
      Array.isArray(value)
        ? value.map(reverse)
        : typeof value === "object" && value !== null
          ? Object.fromEntries(
              Object.entries(value)
                .reverse()
                .map(([k, v]) => [k, reverse(v)]),
            )
          : value;
    const object = sanitize(liveDeployment());
    assert.equal(toStableYaml(reverse(object) as KubeObject), toStableYaml(object));
  });

  it("orders apiVersion, kind, metadata, spec and data first, then the rest alphabetically", () => {
    const yaml = toStableYaml({
      zeta: 1,
      data: { b: "2", a: "1" },
      immutable: true,
      metadata: { name: "c" },
      kind: "ConfigMap",
      binaryData: { z: "AA==" },
      apiVersion: "v1",
    } as KubeObject);
    assert.equal(
      yaml,
      [
        "apiVersion: v1",
        "kind: ConfigMap",
        "metadata:",
        "  name: c",
        "data:",
        '  a: "1"',
        '  b: "2"',
        "binaryData:",
        "  z: AA==",
        "immutable: true",
        "zeta: 1",
        "",
      ].join("\n"),
    );
  });

  it("orders metadata as name, namespace, labels, annotations, then the rest alphabetically", () => {
    const yaml = toStableYaml({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {
        finalizers: ["example.com/cleanup"],
        annotations: { "z.example.com/b": "2", "a.example.com/a": "1" },
        labels: { tier: "frontend", app: "web" },
        namespace: "team-a",
        name: "c",
      },
    });
    assert.equal(
      yaml,
      [
        "apiVersion: v1",
        "kind: ConfigMap",
        "metadata:",
        "  name: c",
        "  namespace: team-a",
        "  labels:",
        "    app: web",
        "    tier: frontend",
        "  annotations:",
        '    a.example.com/a: "1"',
        '    z.example.com/b: "2"',
        "  finalizers:",
        "    - example.com/cleanup",
        "",
      ].join("\n"),
    );
  });

  it("keeps array order", () => {
    const yaml = toStableYaml(sanitize(liveDeployment()));
    assert.ok(yaml.indexOf("name: web\n") < yaml.indexOf("name: sidecar\n"));
    assert.match(yaml, /- image: nginx:1.27\n\s+name: web\n/);
  });

  it("sorts integer-like keys with the others, by code unit", () => {
    const yaml = toStableYaml(configMap({ b: "x", "10": "x", "9": "x" }));
    assert.match(yaml, /data:\n {2}"10": x\n {2}"9": x\n {2}b: x\n$/);
  });

  it("never folds a long string across lines", () => {
    const command = "run --flag=" + "x".repeat(300);
    const yaml = toStableYaml(configMap({ command }));
    assert.ok(yaml.includes(`command: ${command}\n`));
  });

  it("quotes strings YAML 1.1 readers take for booleans, and round-trips them", () => {
    const projection = sanitize(liveConfigMap());
    const yaml = toStableYaml(projection);
    assert.match(yaml, /enabled: "yes"/);
    assert.deepEqual(parse(yaml), projection);
  });

  it("writes no anchors or aliases for a repeated sub-object", () => {
    const selector = { app: "web" };
    const yaml = toStableYaml({ apiVersion: "v1", kind: "Example", a: selector, b: selector } as KubeObject);
    assert.doesNotMatch(yaml, /[&*]/);
  });

  it("ends with one trailing newline", () => {
    const yaml = toStableYaml(sanitize(liveConfigMap()));
    assert.ok(yaml.endsWith("\n") && !yaml.endsWith("\n\n"));
  });
});

describe("AcceptedState", () => {
  const key = "team-a-target/apps/deployments/team-a/web";

  it("a status-only update is a no-op against what was accepted", () => {
    const accepted = new AcceptedState();
    accepted.accept(key, sanitize(liveDeployment()));
    assert.equal(accepted.isNoop(key, sanitize(afterStatusWrite())), true);
  });

  it("a spec change is not a no-op", () => {
    const accepted = new AcceptedState();
    accepted.accept(key, sanitize(liveDeployment()));
    const scaled = liveDeployment();
    (scaled.spec as { replicas: number }).replicas = 3;
    assert.equal(accepted.isNoop(key, sanitize(scaled)), false);
  });

  it("a label change is not a no-op", () => {
    const accepted = new AcceptedState();
    accepted.accept(key, sanitize(liveDeployment()));
    const relabelled = liveDeployment();
    relabelled.metadata!.labels!.tier = "backend";
    assert.equal(accepted.isNoop(key, sanitize(relabelled)), false);
  });

  it("an object never accepted is not a no-op", () => {
    assert.equal(new AcceptedState().isNoop(key, sanitize(liveDeployment())), false);
  });

  it("keeps one accepted state per key", () => {
    const accepted = new AcceptedState();
    accepted.accept(key, sanitize(liveDeployment()));
    assert.equal(
      accepted.isNoop("team-a-target/apps/deployments/team-a/api", sanitize(liveDeployment())),
      false,
    );
  });

  it("after forget, the same object is no longer a no-op, and the key is no longer held", () => {
    const accepted = new AcceptedState();
    accepted.accept(key, sanitize(liveDeployment()));
    assert.equal(accepted.has(key), true);
    accepted.forget(key);
    assert.equal(accepted.has(key), false);
    assert.equal(accepted.isNoop(key, sanitize(liveDeployment())), false);
  });
});
