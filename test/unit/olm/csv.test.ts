// The OLM bundle's decisions (hack/olm/csv.ts, hack/olm/files.ts) on small inputs: names shown in
// the console, the chart's kubeVersion as minKubeVersion, descriptors from a schema, RBAC bound to
// the ServiceAccount with aggregation flattened, and the reasons the bundle cannot be made.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  descriptors,
  displayName,
  manifestFileName,
  minKubeVersion,
  offeredRoles,
  permissionsFor,
  specXDescriptors,
  statusXDescriptors,
  type KubeObject,
} from "../../../hack/olm/csv.ts";
import { readmeOpening } from "../../../hack/olm/files.ts";

const rbacGroup = "rbac.authorization.k8s.io/v1";
const subjects = [{ kind: "ServiceAccount", name: "op", namespace: "x" }];
const read = { apiGroups: [""], resources: ["configmaps"], verbs: ["get"] };
const lease = { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get"] };

describe("the OLM bundle's decisions", () => {
  it("shows kinds and fields as words, acronyms kept whole", () => {
    assert.equal(displayName("ArgoCDClaim"), "Argo CD Claim");
    assert.equal(displayName("gitBranchRef"), "Git Branch Ref");
    assert.equal(displayName("path"), "Path");
  });

  it("takes minKubeVersion from a >= floor only", () => {
    assert.equal(minKubeVersion(">=1.30.0-0"), "1.30.0");
    assert.equal(minKubeVersion(">= v1.31.2"), "1.31.2");
    assert.equal(minKubeVersion("^1.30"), undefined);
    assert.equal(minKubeVersion(">=1.30.0 <1.35.0"), undefined);
  });

  it("describes each top-level field, with a widget by type and conditions as conditions", () => {
    const spec = {
      properties: {
        suspend: { type: "boolean", description: "Stop." },
        mode: { type: "string", enum: ["A", "B"] },
        ref: { type: "object", description: "A reference." },
      },
    };
    assert.deepEqual(
      descriptors(spec, (_p, s) => specXDescriptors(s)),
      [
        {
          path: "suspend",
          displayName: "Suspend",
          description: "Stop.",
          "x-descriptors": ["urn:alm:descriptor:com.tectonic.ui:booleanSwitch"],
        },
        {
          path: "mode",
          displayName: "Mode",
          "x-descriptors": [
            "urn:alm:descriptor:com.tectonic.ui:select:A",
            "urn:alm:descriptor:com.tectonic.ui:select:B",
          ],
        },
        { path: "ref", displayName: "Ref", description: "A reference." },
      ],
    );
    assert.deepEqual(statusXDescriptors("conditions", { type: "array" }), [
      "urn:alm:descriptor:io.kubernetes.conditions",
    ]);
    assert.deepEqual(statusXDescriptors("commit", { type: "string" }), ["urn:alm:descriptor:text"]);
    assert.deepEqual(descriptors(undefined, statusXDescriptors), []);
  });

  it("grants the ServiceAccount what is bound to it, an aggregated ClusterRole flattened to what it selects", () => {
    const rbac: KubeObject[] = [
      {
        apiVersion: rbacGroup,
        kind: "ClusterRole",
        metadata: { name: "watched" },
        aggregationRule: { clusterRoleSelectors: [{ matchLabels: { agg: "true" } }] },
      },
      {
        apiVersion: rbacGroup,
        kind: "ClusterRole",
        metadata: { name: "part", labels: { agg: "true" } },
        rules: [read],
      },
      { apiVersion: rbacGroup, kind: "ClusterRole", metadata: { name: "unbound" }, rules: [lease] },
      { apiVersion: rbacGroup, kind: "Role", metadata: { name: "leader" }, rules: [lease] },
      {
        apiVersion: rbacGroup,
        kind: "ClusterRoleBinding",
        metadata: { name: "watched" },
        roleRef: { kind: "ClusterRole", name: "watched" },
        subjects,
      },
      {
        apiVersion: rbacGroup,
        kind: "RoleBinding",
        metadata: { name: "leader" },
        roleRef: { kind: "Role", name: "leader" },
        subjects,
      },
    ];
    assert.deepEqual(permissionsFor("op", rbac), { clusterRules: [read], namespacedRules: [lease] });
    assert.equal(permissionsFor("other", rbac), "config/rbac binds nothing to the ServiceAccount other");
    const dangling = rbac.filter((o) => o.metadata.name !== "leader" || o.kind !== "Role");
    assert.equal(
      permissionsFor("op", dangling),
      "RoleBinding leader binds Role leader, which config/rbac lacks",
    );
    // What no binding names and no aggregation selects is offered to others to bind.
    assert.deepEqual(
      offeredRoles(rbac).map((o) => o.metadata.name),
      ["unbound"],
    );
  });

  it("names manifests as operator-sdk does", () => {
    const service = { apiVersion: "v1", kind: "Service", metadata: { name: "metrics" } };
    assert.equal(manifestFileName(service), "metrics_v1_service.yaml");
    const csv = {
      apiVersion: "operators.coreos.com/v1alpha1",
      kind: "ClusterServiceVersion",
      metadata: { name: "op.v0.1.0" },
    };
    assert.equal(manifestFileName(csv), "op.clusterserviceversion.yaml");
  });

  it("describes the operator with README's paragraph that opens with its title, and nothing of the repository after it", () => {
    const readme =
      "# Tool X\n\n```sh\nmake\n```\n\nTool X does a thing.\nWell.\n\nIt also does more.\n\n**Status.** Early.\n";
    assert.deepEqual(readmeOpening(readme), {
      title: "Tool X",
      paragraphs: "Tool X does a thing.\nWell.",
    });
    assert.equal(readmeOpening("no title"), "README.md has no # title");
    assert.equal(readmeOpening("# Y\n\nSomething else.\n"), 'README.md has no paragraph that opens with "Y"');
  });
});
