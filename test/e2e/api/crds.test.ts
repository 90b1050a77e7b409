import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import {
  ApiextensionsV1Api,
  CoreV1Api,
  KubernetesObjectApi,
  type KubeConfig,
  type KubernetesObject,
} from "@kubernetes/client-node";
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
  "WebhookClaim team-a/ci": {
    "spec.timeout": "10s",
    "spec.completion.mode": "Callback",
    "spec.completion.settleAfter": undefined,
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

  it("installs all eleven kinds, Established, with a status subresource, Ready and Reason columns, and the gitops-reverser category", async () => {
    assert.equal(crdNames.length, 11);
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
      WebhookClaim: "Namespaced",
    });
  });

  it("accepts every sample and reads it back with its defaults applied", async () => {
    const files = (await readdir(samplesDir)).filter(
      (f) => f.endsWith(".yaml") && f !== "kustomization.yaml",
    );
    const samples = (await Promise.all(files.map((f) => loadManifests(join(samplesDir, f))))).flat();
    const sampledKinds = new Set(samples.map((s) => s.kind));
    assert.equal(sampledKinds.size, 11, `samples cover ${[...sampledKinds].join(", ")}`);

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

  it("explains WebhookClaim's spec with kubectl explain, every field in the words of api/v1alpha3", async () => {
    interface Described {
      description: string;
      properties: Record<string, Described>;
    }
    const source = parse(await readFile(join(repoRoot, "api/v1alpha3/webhookclaim.yaml"), "utf8")) as {
      schema: Described;
    };
    const spec = source.schema.properties.spec!;
    assert.deepEqual(Object.keys(spec.properties), [
      "url",
      "secretRef",
      "timeout",
      "fieldManagers",
      "completion",
    ]);
    const explain = async (path: string) =>
      (
        await eventually(
          () => run(testenvBinaries().kubectl, ["--kubeconfig", plane.kubeconfigPath, "explain", path]),
          { timeoutMs: 30_000, description: `kubectl explain ${path}` },
        )
      ).stdout;
    const squash = (text: string) => text.replace(/\s+/g, " ").trim();
    const explained = squash(await explain("webhookclaim.spec"));
    for (const [field, described] of [["spec", spec], ...Object.entries(spec.properties)] as const) {
      assert.ok(
        explained.includes(squash(described.description)),
        `kubectl explain lacks ${field}: ${explained}`,
      );
    }
    // The required fields are marked, and completion's modes are explained one level down.
    assert.match(explained, /url <string> -required-/);
    assert.match(explained, /secretRef <Object> -required-/);
    const completion = squash(await explain("webhookclaim.spec.completion"));
    assert.ok(
      completion.includes(squash(spec.properties.completion!.properties.mode!.description)),
      completion,
    );
    assert.match(completion, /mode <string> enum: Callback, Status, Settle/);
  });

  it("shows URL, Completion and Operation in kubectl get webhookclaims, the operation's end set by a tool holding only the Role docs/rbac.md grants it", async () => {
    const kubectlAs = (kubeconfig: string, ...args: string[]) =>
      run(testenvBinaries().kubectl, ["--kubeconfig", kubeconfig, "-n", "team-a", ...args]);
    const kubectl = (...args: string[]) => kubectlAs(plane.kubeconfigPath, ...args);
    const objects = KubernetesObjectApi.makeApiClient(kc);
    await objects.create({
      apiVersion: "configbutler.ai/v1alpha3",
      kind: "WebhookClaim",
      metadata: { name: "deployer", namespace: "team-a" },
      spec: {
        url: "https://deployer.example.com/apply",
        secretRef: { name: "deployer-hmac" },
        completion: { mode: "Status" },
      },
    });
    const table = async () => {
      const { stdout } = await kubectl("get", "webhookclaims", "deployer");
      const [header, row] = stdout.trim().split("\n");
      // Columns are padded with spaces; an empty cell is the header's width of blanks.
      const starts = [...header!.matchAll(/\S+/g)].map((m) => m.index);
      return Object.fromEntries(
        starts.map((start, i) => [
          header!.slice(start, starts[i + 1]).trim(),
          row!.slice(start, starts[i + 1]).trim(),
        ]),
      );
    };
    const before = await table();
    assert.deepEqual(Object.keys(before), [
      "NAME",
      "URL",
      "COMPLETION",
      "OPERATION",
      "READY",
      "REASON",
      "AGE",
    ]);
    assert.equal(before.URL, "https://deployer.example.com/apply");
    assert.equal(before.COMPLETION, "Status");
    assert.equal(before.OPERATION, "");

    // The operator records the operation it asked the tool for (here, as the admin).
    const operation = { requestToken: "t-1", reason: "ForeignCommit", commit: "0123abc", phase: "Running" };
    const statusPatch = (op: object) => [
      "patch",
      "webhookclaim",
      "deployer",
      "--subresource=status",
      "--type=merge",
      "-p",
      JSON.stringify({ status: { operation: op } }),
    ];
    const recorded = await kubectl(...statusPatch(operation));
    assert.equal(recorded.stderr, "");
    assert.equal((await table()).OPERATION, "Running");

    // The tool, as its own ServiceAccount bound to the Role docs/rbac.md shows, reads the
    // operation and reports its end through the status subresource.
    const rbacDoc = await readFile(join(repoRoot, "docs/rbac.md"), "utf8");
    const block = [...rbacDoc.matchAll(/```yaml\n([\s\S]*?)```/g)]
      .map((m) => m[1]!)
      .find((text) => text.includes("webhookclaims/status"));
    assert.ok(block, "docs/rbac.md shows the Role a Status tool needs");
    const role = parse(block) as { metadata: { name: string } };
    await applyManifests(kc, [
      role,
      {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "RoleBinding",
        metadata: { name: role.metadata.name, namespace: "team-a" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: role.metadata.name },
        subjects: [{ kind: "ServiceAccount", name: "deployer", namespace: "team-a" }],
      },
    ] as KubernetesObject[]);
    const tool = await plane.serviceAccountToken("team-a", "deployer");
    const read = await eventually(
      () =>
        kubectlAs(
          tool.kubeconfigPath,
          "get",
          "webhookclaim",
          "deployer",
          "-o",
          "jsonpath={.status.operation}",
        ),
      { description: "the tool's Role to take effect" },
    );
    const reported = {
      ...(JSON.parse(read.stdout) as object),
      phase: "Succeeded",
      message: "applied 0123abc",
    };
    const patched = await kubectlAs(tool.kubeconfigPath, ...statusPatch(reported));
    assert.equal(patched.stderr, "");
    assert.equal((await table()).OPERATION, "Succeeded");

    // The same tool may not change what the claim asks for.
    await assert.rejects(
      kubectlAs(
        tool.kubeconfigPath,
        "patch",
        "webhookclaim",
        "deployer",
        "--type=merge",
        "-p",
        JSON.stringify({ spec: { url: "https://elsewhere.example.com/" } }),
      ),
      (err: { stderr?: string }) => /forbidden/i.test(err.stderr ?? ""),
    );

    const short = await kubectl(
      "get",
      "whc",
      "deployer",
      "-o",
      "custom-columns=PHASE:.status.operation.phase,MESSAGE:.status.operation.message",
    );
    assert.match(
      short.stdout,
      /^PHASE\s+MESSAGE\nSucceeded\s+applied 0123abc\n$/,
      "the short name whc reads the same object",
    );
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
    assert.equal(kinds.size, 11, stdout);
  });
});
