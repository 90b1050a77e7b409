import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AcceptedState } from "../../../internal/sanitize/accepted.ts";
import { contentDigest } from "../../../internal/sanitize/digest.ts";
import {
  keepWrittenDefaults,
  splitOwned,
  unownedOf,
  type DefaultVerdict,
} from "../../../internal/sanitize/owned.ts";
import { project, type KubeObject } from "../../../internal/sanitize/sanitize.ts";

// A Deployment as `kubectl apply --server-side` of a short manifest leaves it: the manager owns
// what the manifest said; the API server defaulted the rest.
function appliedDeployment(pullPolicy = "IfNotPresent"): KubeObject {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: {
      name: "web",
      namespace: "shop",
      uid: "0f1e2d3c",
      managedFields: [
        {
          manager: "kubectl",
          operation: "Apply",
          apiVersion: "apps/v1",
          fieldsType: "FieldsV1",
          fieldsV1: {
            "f:spec": {
              "f:replicas": {},
              "f:selector": {},
              "f:template": {
                "f:metadata": { "f:labels": { "f:app": {} } },
                "f:spec": {
                  "f:containers": {
                    'k:{"name":"web"}': {
                      ".": {},
                      "f:name": {},
                      "f:image": {},
                      "f:args": {},
                      "f:ports": {
                        'k:{"containerPort":80,"protocol":"TCP"}': { ".": {}, "f:containerPort": {} },
                      },
                    },
                  },
                },
              },
            },
          },
        },
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
              args: ["--port", "80"],
              imagePullPolicy: pullPolicy,
              ports: [{ containerPort: 80, protocol: "TCP" }],
              terminationMessagePath: "/dev/termination-log",
            },
          ],
          dnsPolicy: "ClusterFirst",
          restartPolicy: "Always",
          securityContext: {},
        },
      },
    },
    status: { replicas: 2 },
  };
}

const applied = {
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "web", namespace: "shop" },
  spec: {
    replicas: 2,
    selector: { matchLabels: { app: "web" } },
    template: {
      metadata: { labels: { app: "web" } },
      spec: {
        containers: [
          { name: "web", image: "nginx:1.27", args: ["--port", "80"], ports: [{ containerPort: 80 }] },
        ],
      },
    },
  },
};

// The verdict of a dry-run that answered every unowned value back (proof.ts makes real ones).
const everyUnownedProven: DefaultVerdict = () => true;

describe("a field no manager owns is left out only when proven the API server's default", () => {
  it("without a proof every value no manager owns is kept", () => {
    const { object, defaulted } = project(appliedDeployment());
    assert.equal(defaulted, undefined);
    const spec = object.spec as { revisionHistoryLimit?: number; template: typeof applied.spec.template };
    assert.equal(spec.revisionHistoryLimit, 10);
    assert.deepEqual(spec.template.spec.containers[0]?.ports, [{ containerPort: 80, protocol: "TCP" }]);
  });

  it("a proven default is left out of the projection, with its live value set aside", () => {
    const { object, defaulted } = project(appliedDeployment(), everyUnownedProven);
    assert.deepEqual(object, applied);
    assert.deepEqual(defaulted?.inside?.spec?.values, {
      progressDeadlineSeconds: 600,
      revisionHistoryLimit: 10,
      strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: "25%", maxUnavailable: "25%" } },
    });
  });

  it("a list item is matched by its key fields, and a key field nobody set is left out of it", () => {
    const { object } = project(appliedDeployment(), everyUnownedProven);
    const spec = object.spec as typeof applied.spec;
    assert.deepEqual(spec.template.spec.containers[0]?.ports, [{ containerPort: 80 }]);
  });

  it("a value owned whole (an atomic list or map) is kept whole", () => {
    const { object } = project(appliedDeployment(), everyUnownedProven);
    const spec = object.spec as typeof applied.spec;
    assert.deepEqual(spec.selector, { matchLabels: { app: "web" } });
    assert.deepEqual(spec.template.spec.containers[0]?.args, ["--port", "80"]);
  });

  it("without managedFields nothing can be told apart, and everything is kept", () => {
    const live = appliedDeployment();
    delete live.metadata!.managedFields;
    const { object, defaulted } = project(live);
    assert.equal(defaulted, undefined);
    assert.equal((object.spec as { revisionHistoryLimit?: number }).revisionHistoryLimit, 10);
  });

  it("a defaulted field a document does not set is never added to it", () => {
    const { object, defaulted } = project(appliedDeployment(), everyUnownedProven);
    assert.deepEqual(keepWrittenDefaults(applied, object, defaulted), applied);
  });

  it("a defaulted field a document sets stays, with its live value", () => {
    const written = structuredClone(applied) as Record<string, unknown> & typeof applied;
    Object.assign(written.spec, { revisionHistoryLimit: 3 });
    Object.assign(written.spec.template.spec.containers[0]!, { imagePullPolicy: "Always" });
    const { object, defaulted } = project(appliedDeployment("Never"), everyUnownedProven);
    const desired = keepWrittenDefaults(written, object, defaulted) as typeof written;
    assert.equal((desired.spec as { revisionHistoryLimit?: number }).revisionHistoryLimit, 10);
    assert.equal(
      (desired.spec.template.spec.containers[0] as { imagePullPolicy?: string }).imagePullPolicy,
      "Never",
    );
    assert.equal((desired.spec as { strategy?: unknown }).strategy, undefined, "not set in Git: not added");
  });

  it("an item no manager owns, proven a default, is left out of its list", () => {
    const fields = { "f:finalizers": { 'v:"example.com/keep"': {} } };
    const object = { metadata: { finalizers: ["example.com/keep", "example.com/injected"] } };
    const unowned = unownedOf(object, [{ fieldsType: "FieldsV1", fieldsV1: { "f:metadata": fields } }]);
    const { owned } = splitOwned(object, unowned, everyUnownedProven);
    assert.deepEqual(owned, { metadata: { finalizers: ["example.com/keep"] } });
  });

  it("a change only in a defaulted value is not a no-op", () => {
    const accepted = new AcceptedState();
    const before = project(appliedDeployment("IfNotPresent"), everyUnownedProven);
    const after = project(appliedDeployment("Always"), everyUnownedProven);
    accepted.accept("web", before.object, before.defaulted);
    assert.equal(accepted.isNoop("web", before.object, before.defaulted), true);
    assert.equal(accepted.isNoop("web", after.object, after.defaulted), false);
  });

  it("what it accepts gives the writer the content digest of the object alone, defaulted or not", () => {
    const accepted = new AcceptedState();
    const before = project(appliedDeployment("IfNotPresent"), everyUnownedProven);
    const after = project(appliedDeployment("Always"), everyUnownedProven);
    assert.ok(before.defaulted, "the fixture has defaulted fields");
    assert.equal(accepted.accept("web", before.object, before.defaulted), contentDigest(before.object));
    assert.equal(accepted.acceptIfChanged("web", before.object, before.defaulted), undefined, "a no-op");
    assert.equal(accepted.acceptIfChanged("web", after.object, after.defaulted), contentDigest(after.object));
    assert.equal(accepted.accept("plain", before.object), contentDigest(before.object));
  });
});

describe("the Namespace's label and finalizer the API server always sets are stripped", () => {
  it("strips kubernetes.io/metadata.name and the kubernetes finalizer, and the spec they leave empty", () => {
    const live: KubeObject = {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: {
        name: "shop",
        labels: { "kubernetes.io/metadata.name": "shop", team: "payments" },
        managedFields: [
          {
            manager: "kubectl",
            operation: "Apply",
            fieldsType: "FieldsV1",
            fieldsV1: {
              "f:metadata": { "f:labels": { "f:kubernetes.io/metadata.name": {}, "f:team": {} } },
              "f:spec": { "f:finalizers": { ".": {}, 'v:"kubernetes"': {} } },
            },
          },
        ],
      },
      spec: { finalizers: ["kubernetes"] },
      status: { phase: "Active" },
    };
    assert.deepEqual(project(live).object, {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: "shop", labels: { team: "payments" } },
    });
  });

  it("keeps a Namespace's finalizers when they list another", () => {
    const live: KubeObject = {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: "shop" },
      spec: { finalizers: ["kubernetes", "example.com/drain"] },
    };
    assert.deepEqual(project(live).object.spec, { finalizers: ["kubernetes", "example.com/drain"] });
  });
});
