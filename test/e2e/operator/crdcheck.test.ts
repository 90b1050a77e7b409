// The operator's start-up check of the CRDs it writes, as a user meets it: an install whose
// GitBranch CRD predates status.heldBy (a chart with crds.install off, a kustomize install that
// skipped config/crd). The process, under config/rbac's roles, reconciles nothing, says which
// CRD lacks which field and which manifest to apply, and starts once the CRD is applied.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, type KubeConfig, type KubernetesObject } from "@kubernetes/client-node";
import { gitProviders } from "../../../generated/v1alpha3/index.ts";
import { repoRoot } from "../../support/binaries.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { applyManifests, installCrdFiles, installCrds, loadManifests } from "../../support/manifests.ts";
import { startOperatorProcess, type OperatorProcess } from "../../support/operator.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";
import { shippedOperatorIdentity } from "../../support/shippedrbac.ts";
import { eventually } from "../../support/wait.ts";

const manifest = "config/crd/bases/configbutler.ai_gitbranches.yaml";

describe("the operator's start-up check of the CRDs it writes", () => {
  let plane: ControlPlane;
  let kc: KubeConfig;
  let dir: string;
  let operator: OperatorProcess;

  before(async () => {
    plane = await ControlPlane.start();
    kc = plane.kubeConfig();
    dir = makeOwnedTempDir("crdcheck");
    await installCrds(kc);
    // The GitBranch CRD as an earlier version served it: no status.heldBy.
    const [crd] = (await loadManifests(join(repoRoot, manifest))) as (KubernetesObject & {
      spec: {
        versions: {
          schema: { openAPIV3Schema: { properties: { status: { properties: Record<string, unknown> } } } };
        }[];
      };
    })[];
    delete crd!.spec.versions[0]!.schema.openAPIV3Schema.properties.status.properties.heldBy;
    await applyManifests(kc, [crd!]);
    // An object the operator would reconcile at once.
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: "team" } } });
    await gitProviders(kc).apply(
      {
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "GitProvider",
        metadata: { name: "state", namespace: "team" },
        spec: { url: "https://127.0.0.1:1/state.git", allowedGitBranches: [] },
      },
      "test",
    );
    const identity = await shippedOperatorIdentity(plane, kc);
    operator = startOperatorProcess(identity.kubeconfigPath, dir, ["--leader-elect=false"]);
  });
  after(async () => {
    await operator?.process.stop();
    await plane?.stop();
    removeOwnedTempDir(dir);
  });

  it("a CRD missing a field this version writes is refused with a message naming the manifest", async () => {
    const probes = await operator.port("probes");
    const readyz = async () => {
      const response = await fetch(`http://127.0.0.1:${probes}/readyz`);
      return { status: response.status, body: await response.text() };
    };
    const refused = await eventually(
      async () => {
        const answer = await readyz();
        return answer.body.includes("gitbranches.configbutler.ai") && answer;
      },
      {
        timeoutMs: 60_000,
        description: () => `/readyz naming the CRD; last lines:\n${operator.process.logTail()}`,
      },
    );
    assert.equal(refused.status, 503);
    assert.match(refused.body, /CustomResourceDefinition gitbranches\.configbutler\.ai lacks status\.heldBy/);
    assert.ok(refused.body.includes(manifest), refused.body);
    // Checked twice, a check interval apart: long past the start an unchecked process makes.
    const errors = () =>
      readFileSync(operator.logFile, "utf8")
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((l) => l.crd === "gitbranches.configbutler.ai");
    await eventually(() => errors().length >= 2, {
      timeoutMs: 60_000,
      description: "the CRD checked a second time",
    });
    assert.equal(errors()[0]!.level, "error");
    assert.deepEqual(errors()[0]!.missing, ["status.heldBy"]);
    const conditions = async () => (await gitProviders(kc).get("team", "state"))?.status?.conditions;
    assert.equal(await conditions(), undefined, "nothing is reconciled while the CRD is older");
    assert.match((await readyz()).body, /informers have not synced/);

    // The manifest applied, the process starts without a restart.
    await installCrdFiles(kc, [join(repoRoot, manifest)]);
    await eventually(async () => (await readyz()).status === 200, {
      timeoutMs: 60_000,
      description: () => `/readyz 200 once the CRD is current; last lines:\n${operator.process.logTail()}`,
    });
    assert.ok(readFileSync(operator.logFile, "utf8").includes("the CRDs are current; starting"));
    await eventually(async () => (await conditions()) !== undefined, {
      timeoutMs: 30_000,
      description: "the GitProvider reconciled once the process started",
    });
  });
});
