import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { lastAppliedAnnotation } from "../../../internal/sanitize/lastapplied.ts";
import type { DefaultVerdict } from "../../../internal/sanitize/owned.ts";
import { project, type KubeObject } from "../../../internal/sanitize/sanitize.ts";

// The verdict of a dry-run that answered every unowned value back (proof.ts makes real ones).
const everyUnownedProven: DefaultVerdict = () => true;

// What `kubectl apply` (client-side) of this manifest sends, and records in the annotation.
const manifest = {
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "web", namespace: "shop" },
  spec: {
    replicas: 2,
    selector: { matchLabels: { app: "web" } },
    template: {
      metadata: { labels: { app: "web" } },
      spec: { containers: [{ name: "web", image: "nginx:1.27", ports: [{ containerPort: 80 }] }] },
    },
  },
};

// The Update entry of a client-side apply's create owns what decoding defaulted as well.
const createdFields = {
  "f:metadata": {
    "f:annotations": { ".": {}, [`f:${lastAppliedAnnotation}`]: {} },
  },
  "f:spec": {
    "f:progressDeadlineSeconds": {},
    "f:replicas": {},
    "f:revisionHistoryLimit": {},
    "f:selector": {},
    "f:strategy": { "f:rollingUpdate": { ".": {}, "f:maxSurge": {}, "f:maxUnavailable": {} }, "f:type": {} },
    "f:template": {
      "f:metadata": { "f:labels": { ".": {}, "f:app": {} } },
      "f:spec": {
        "f:containers": {
          'k:{"name":"web"}': {
            ".": {},
            "f:image": {},
            "f:imagePullPolicy": {},
            "f:name": {},
            "f:ports": {
              ".": {},
              'k:{"containerPort":80,"protocol":"TCP"}': { ".": {}, "f:containerPort": {}, "f:protocol": {} },
            },
            "f:terminationMessagePath": {},
          },
        },
        "f:dnsPolicy": {},
        "f:restartPolicy": {},
      },
    },
  },
};

function clientSideApplied(annotation = JSON.stringify(manifest), edits: object[] = []): KubeObject {
  return {
    ...manifest,
    metadata: {
      ...manifest.metadata,
      annotations: { [lastAppliedAnnotation]: annotation },
      managedFields: [
        {
          manager: "argocd-controller",
          operation: "Update",
          fieldsType: "FieldsV1",
          fieldsV1: createdFields,
        },
        ...edits,
      ],
    },
    spec: {
      replicas: 2,
      progressDeadlineSeconds: 600,
      revisionHistoryLimit: 10,
      selector: { matchLabels: { app: "web" } },
      strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: "25%", maxUnavailable: "25%" } },
      template: {
        metadata: { labels: { app: "web" } },
        spec: {
          containers: [
            {
              name: "web",
              image: "nginx:1.27",
              imagePullPolicy: "IfNotPresent",
              ports: [{ containerPort: 80, protocol: "TCP" }],
              terminationMessagePath: "/dev/termination-log",
              env: [{ name: "MODE", value: "debug" }],
            },
          ],
          dnsPolicy: "ClusterFirst",
          restartPolicy: "Always",
        },
      },
    },
  };
}

const withoutEnv = (object: KubeObject) => {
  const copy = structuredClone(object);
  const containers = (copy.spec as typeof manifest.spec).template.spec.containers as { env?: unknown }[];
  delete containers[0]!.env;
  return copy;
};

describe("a client-side apply owns what its last-applied input holds", () => {
  it("the manager that wrote last-applied-configuration owns only what that input sets", () => {
    const { object, defaulted } = project(withoutEnv(clientSideApplied()), everyUnownedProven);
    assert.deepEqual(object, manifest);
    assert.deepEqual(defaulted?.inside?.spec?.values, {
      progressDeadlineSeconds: 600,
      revisionHistoryLimit: 10,
      strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: "25%", maxUnavailable: "25%" } },
    });
  });

  it("a list item whose key field was defaulted is still the manifest's item", () => {
    const { object } = project(withoutEnv(clientSideApplied()), everyUnownedProven);
    const containers = (object.spec as typeof manifest.spec).template.spec.containers;
    assert.deepEqual(containers[0]?.ports, [{ containerPort: 80 }]);
  });

  it("another manager's later edit is kept", () => {
    const edit = {
      manager: "kubectl-edit",
      operation: "Update",
      fieldsType: "FieldsV1",
      fieldsV1: {
        "f:spec": {
          "f:template": {
            "f:spec": {
              "f:containers": {
                'k:{"name":"web"}': {
                  "f:env": { ".": {}, 'k:{"name":"MODE"}': { ".": {}, "f:name": {}, "f:value": {} } },
                },
              },
            },
          },
        },
      },
    };
    const { object } = project(clientSideApplied(undefined, [edit]), everyUnownedProven);
    const containers = (object.spec as typeof manifest.spec).template.spec.containers as { env?: unknown }[];
    assert.deepEqual(containers[0]?.env, [{ name: "MODE", value: "debug" }]);
  });

  it("an annotation that is not JSON narrows nothing", () => {
    const { object } = project(withoutEnv(clientSideApplied("{not json")), everyUnownedProven);
    assert.equal((object.spec as { revisionHistoryLimit?: number }).revisionHistoryLimit, 10);
  });
});
