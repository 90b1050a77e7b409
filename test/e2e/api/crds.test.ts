import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { ApiextensionsV1Api, CoreV1Api, KubernetesObjectApi, type KubeConfig } from "@kubernetes/client-node";
import { parse } from "yaml";
import { repoRoot, testenvBinaries } from "../../support/binaries.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { applyManifests, installCrds, loadManifests } from "../../support/manifests.ts";
import { eventually } from "../../support/wait.ts";

const run = promisify(execFile);
const samplesDir = join(repoRoot, "config/samples");

/** The value at a dotted path, such as "spec.commit.window.idleTimeout". */
function at(object: unknown, path: string): unknown {
  return path
    .split(".")
    .reduce<unknown>((value, key) => (value as Record<string, unknown> | undefined)?.[key], object);
}

/** Asserts that every field `expected` sets has the same value in `actual`: nothing was pruned or changed. */
function assertIncludes(actual: unknown, expected: unknown, where: string): void {
  if (Array.isArray(expected)) {
    assert.ok(
      Array.isArray(actual) && actual.length === expected.length,
      `${where}: ${JSON.stringify(actual)}`,
    );
    expected.forEach((item, i) => assertIncludes((actual as unknown[])[i], item, `${where}[${i}]`));
    return;
  }
  if (expected !== null && typeof expected === "object" && !Array.isArray(expected)) {
    for (const [key, value] of Object.entries(expected)) {
      assertIncludes((actual as Record<string, unknown> | undefined)?.[key], value, `${where}.${key}`);
    }
    return;
  }
  assert.deepEqual(actual, expected, where);
}

/** What admission defaults in each sample, which the sample itself leaves out. */
const expectedDefaults: Record<string, Record<string, unknown>> = {
  "GitTarget team-a/team-a": {
    "spec.commit.window.idleTimeout": "5s",
    "spec.commit.window.maxDuration": "1m",
    "spec.prune.mode": "OnEvent",
    "spec.onRefusal": "Ignore",
    "spec.encryption.provider": "SOPS",
  },
  "CommitRequest team-a/release-1-4": {
    "spec.window.attach": "CurrentOrNext",
    "spec.window.attachTimeout": "5s",
    "spec.window.maxDuration": "2s",
    "spec.window.idleTimeout": undefined,
    "spec.whenNothingToCommit": "Resolve",
  },
  "KubeProvider team-a/prod-eu": {
    "spec.commitRequests": "Ignore",
    "spec.client.qps": 50,
    "spec.client.burst": 40,
    "spec.client.timeout": "30s",
  },
  "KubeProvider team-a/in-cluster": { "spec.commitRequests": "Ignore", "spec.client": undefined },
  "GitProvider team-a/cluster-state": {
    "spec.commit.committer.name": "GitOps Reverser",
    "spec.commit.committer.email": "noreply@configbutler.ai",
  },
};

describe("the v1alpha3 CRDs in a real API server", () => {
  let plane: ControlPlane;
  let kc: KubeConfig;
  let crdNames: string[];

  before(async () => {
    plane = await ControlPlane.start();
    kc = plane.kubeConfig();
    crdNames = await installCrds(kc);
    for (const name of ["team-a", "flux-system", "argocd"]) {
      await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
    }
  });
  after(async () => {
    await plane?.stop();
  });

  it("installs all ten kinds, Established, with a status subresource, Ready and Reason columns, and the gitops-reverser category", async () => {
    assert.equal(crdNames.length, 10);
    const api = kc.makeApiClient(ApiextensionsV1Api);
    const kinds = new Map<string, string>();
    for (const name of crdNames) {
      const crd = await api.readCustomResourceDefinition({ name });
      kinds.set(crd.spec.names.kind, crd.spec.scope);
      assert.equal(crd.spec.group, "configbutler.ai");
      assert.deepEqual(crd.spec.names.categories, ["gitops-reverser"]);
      assert.ok((crd.spec.names.shortNames ?? []).length > 0, `${name} has no short name`);
      const [version] = crd.spec.versions;
      assert.equal(version?.name, "v1alpha3");
      assert.ok(version?.subresources?.status, `${name} has no status subresource`);
      const columns = (version?.additionalPrinterColumns ?? []).map((c) => c.name);
      assert.ok(
        columns.includes("Ready") && columns.includes("Reason"),
        `${name} columns: ${columns.join(", ")}`,
      );
    }
    assert.deepEqual(Object.fromEntries(kinds), {
      ArgoCDClaim: "Namespaced",
      ClusterWatchRule: "Cluster",
      CommitRequest: "Namespaced",
      FluxClaim: "Namespaced",
      GitBranch: "Namespaced",
      GitProvider: "Namespaced",
      GitReceiver: "Namespaced",
      GitTarget: "Namespaced",
      KubeProvider: "Namespaced",
      WatchRule: "Namespaced",
    });
  });

  it("accepts every sample and reads it back with its defaults applied", async () => {
    const files = (await readdir(samplesDir)).filter(
      (f) => f.endsWith(".yaml") && f !== "kustomization.yaml",
    );
    const samples = (await Promise.all(files.map((f) => loadManifests(join(samplesDir, f))))).flat();
    const sampledKinds = new Set(samples.map((s) => s.kind));
    assert.equal(sampledKinds.size, 10, `samples cover ${[...sampledKinds].join(", ")}`);

    await applyManifests(kc, samples);
    const objects = KubernetesObjectApi.makeApiClient(kc);
    const checked = new Set<string>();
    for (const sample of samples) {
      const stored = await objects.read({
        apiVersion: sample.apiVersion!,
        kind: sample.kind!,
        metadata: { name: sample.metadata!.name!, namespace: sample.metadata!.namespace },
      });
      const key = `${sample.kind} ${[sample.metadata?.namespace, sample.metadata?.name].filter(Boolean).join("/")}`;
      for (const [path, value] of Object.entries(expectedDefaults[key] ?? {})) {
        assert.deepEqual(at(stored, path), value, `${key}: ${path}`);
        checked.add(key);
      }
      assertIncludes(at(stored, "spec"), at(sample, "spec"), `${key}: spec`);
    }
    assert.deepEqual([...checked].sort(), Object.keys(expectedDefaults).sort());
  });

  it("teaches the API through kubectl explain, in the words of api/v1alpha3", async () => {
    interface Described {
      description: string;
      properties: Record<string, Described>;
    }
    const source = parse(await readFile(join(repoRoot, "api/v1alpha3/gittarget.yaml"), "utf8")) as {
      schema: Described;
    };
    const window = source.schema.properties.spec!.properties.commit!.properties.window!;
    // The API server publishes a new CRD's OpenAPI a moment after it is Established.
    const { stdout } = await eventually(
      () =>
        run(testenvBinaries().kubectl, [
          "--kubeconfig",
          plane.kubeconfigPath,
          "explain",
          "gittarget.spec.commit.window",
        ]),
      { timeoutMs: 30_000, description: "kubectl explain to know GitTarget" },
    );
    const squash = (text: string) => text.replace(/\s+/g, " ").trim();
    const explained = squash(stdout);
    for (const description of [
      window.description,
      window.properties.idleTimeout!.description,
      window.properties.maxDuration!.description,
    ]) {
      assert.ok(explained.includes(squash(description)), `kubectl explain lacks: ${description}`);
    }
  });

  it("lists every kind with kubectl get gitops-reverser", async () => {
    const { stdout } = await run(testenvBinaries().kubectl, [
      "--kubeconfig",
      plane.kubeconfigPath,
      "get",
      "gitops-reverser",
      "--all-namespaces",
      "-o",
      "name",
    ]);
    const kinds = new Set(
      stdout
        .trim()
        .split("\n")
        .map((line) => line.split("/")[0]),
    );
    assert.equal(kinds.size, 10, stdout);
  });
});
