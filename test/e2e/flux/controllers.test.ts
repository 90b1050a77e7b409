// The real Flux source-controller and kustomize-controller (test/support/flux.ts) against a
// test control plane and Git server: a folder pushed to a branch is applied, a pushed change is
// applied after a reconcile request, and a suspended Kustomization applies nothing.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ApiextensionsV1Api, CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import type { ResourceClient } from "../../../internal/kube/resourceclient.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { requestReconcile, startFlux, type Flux, type FluxObject } from "../../support/flux.ts";
import { GitServer } from "../../support/gitserver.ts";
import { eventually } from "../../support/wait.ts";

const namespace = "apps";
const repository = "fleet";
const user = { username: "flux", password: "flux-password" };

function configMap(color: string): string {
  return [
    "apiVersion: v1",
    "kind: ConfigMap",
    "metadata:",
    "  name: settings",
    `  namespace: ${namespace}`,
    "data:",
    `  color: ${color}`,
    "",
  ].join("\n");
}

describe("Flux source-controller and kustomize-controller, built from Go modules", () => {
  let plane: ControlPlane;
  let git: GitServer;
  let flux: Flux;
  let kc: KubeConfig;
  let sources: ResourceClient<FluxObject>;
  let kustomizations: ResourceClient<FluxObject>;
  let core: CoreV1Api;

  const colorInCluster = async () =>
    (await core.readNamespacedConfigMap({ namespace, name: "settings" }).catch(() => undefined))?.data?.color;
  const push = (color: string) =>
    git.pushForeignCommit(repository, { files: { "deploy/settings.yaml": configMap(color) } });
  /** Waits until source-controller serves an artifact of `commit` and returns the GitRepository. */
  const sourceAt = (commit: string) =>
    eventually(
      async () => {
        const found = await sources.get(namespace, "fleet");
        return found?.status?.artifact?.revision === `main@sha1:${commit}` && found;
      },
      { timeoutMs: 60_000, description: `GitRepository fleet at ${commit}` },
    );

  before(async () => {
    plane = await ControlPlane.start();
    kc = plane.kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    git = await GitServer.start({ users: [user] });
    await git.createRepository(repository);
    flux = await startFlux(plane);
    sources = flux.gitRepositories(kc);
    kustomizations = flux.kustomizations(kc);
    await core.createNamespace({ body: { metadata: { name: namespace } } });
  });
  after(async () => {
    await flux?.stop();
    await git?.close();
    await plane?.stop();
  });

  it("installs the v1 GitRepository and Kustomization APIs from the modules' CRDs", async () => {
    const api = kc.makeApiClient(ApiextensionsV1Api);
    for (const name of [
      "gitrepositories.source.toolkit.fluxcd.io",
      "kustomizations.kustomize.toolkit.fluxcd.io",
    ]) {
      assert.ok(flux.crds.includes(name), `${name} installed`);
      const crd = await api.readCustomResourceDefinition({ name });
      assert.ok(crd.spec.versions.some((v) => v.name === "v1" && v.served && v.storage));
    }
  });

  it("applies a folder from Git, then a pushed change once a reconcile is requested", async () => {
    const first = await push("blue");
    // The GitServer asks for HTTP Basic auth; source-controller reads it from this Secret.
    await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: "git-credentials" }, stringData: user },
    });
    await sources.apply(
      {
        metadata: { name: "fleet", namespace },
        spec: {
          interval: "1m",
          url: git.repositoryUrl(repository),
          ref: { branch: "main" },
          secretRef: { name: "git-credentials" },
        },
      },
      "test",
    );
    await kustomizations.apply(
      {
        metadata: { name: "apps", namespace },
        spec: {
          interval: "1m",
          path: "./deploy",
          prune: true,
          sourceRef: { kind: "GitRepository", name: "fleet" },
        },
      },
      "test",
    );

    const fetched = await sourceAt(first);
    assert.match(fetched.status!.artifact!.url!, new RegExp(`^${flux.storageUrl}/gitrepository/`));
    await eventually(async () => (await colorInCluster()) === "blue", {
      timeoutMs: 60_000,
      description: "ConfigMap settings with color blue",
    });

    const second = await push("green");
    // An interval of 1m would pick it up only after a minute; the request makes it now.
    const sourceToken = await requestReconcile(sources, namespace, "fleet");
    const refetched = await sourceAt(second);
    assert.equal(refetched.status?.lastHandledReconcileAt, sourceToken);
    // kustomize-controller watches its source's artifact revision: no request needed for it.
    await eventually(async () => (await colorInCluster()) === "green", {
      timeoutMs: 60_000,
      description: "ConfigMap settings with color green",
    });
    const ksToken = await requestReconcile(kustomizations, namespace, "apps");
    // Handled, and Ready once more: a reconcile the new revision started may still be marking
    // Ready Unknown when the token's reconcile has ended.
    const applied = await eventually(
      async () => {
        const found = await kustomizations.get(namespace, "apps");
        const ready = found?.status?.conditions?.find((c) => c.type === "Ready")?.status;
        return found?.status?.lastHandledReconcileAt === ksToken && ready === "True" && found;
      },
      { timeoutMs: 60_000, description: "Kustomization apps to handle the reconcile request, Ready" },
    );
    assert.equal(applied.status?.lastAppliedRevision, `main@sha1:${second}`);
  });

  it("applies nothing while the Kustomization is suspended, and catches up once resumed", async () => {
    // A field manager of its own: applied as "test", the object would lose every other field.
    const suspend = (suspended: boolean) =>
      kustomizations.apply(
        { metadata: { name: "apps", namespace }, spec: { suspend: suspended } },
        "suspender",
      );
    const suspended = await suspend(true);
    await eventually(
      async () =>
        (await kustomizations.get(namespace, "apps"))?.status?.observedGeneration ===
        suspended.metadata?.generation,
      { timeoutMs: 60_000, description: "kustomize-controller to observe the suspension" },
    );

    const third = await push("red");
    await requestReconcile(sources, namespace, "fleet");
    await sourceAt(third);
    // A handled request proves a reconcile ran after the artifact moved: one that is not
    // suspended applies the artifact before it records the token, so no wait is needed.
    const token = await requestReconcile(kustomizations, namespace, "apps");
    const handled = await eventually(
      async () => {
        const found = await kustomizations.get(namespace, "apps");
        return found?.status?.lastHandledReconcileAt === token && found;
      },
      { timeoutMs: 60_000, description: "the suspended Kustomization to handle the request" },
    );
    assert.notEqual(handled.status?.lastAppliedRevision, `main@sha1:${third}`);
    assert.equal(await colorInCluster(), "green");

    await suspend(false);
    await eventually(async () => (await colorInCluster()) === "red", {
      timeoutMs: 60_000,
      description: "ConfigMap settings with color red after resuming",
    });
  });
});
