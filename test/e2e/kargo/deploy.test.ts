// The Kargo observer's install manifests: config/kargo-observer rendered by the pinned kubectl,
// accepted by a real API server's server-side dry run (with Argo CD's and Kargo's CRDs
// installed), its ClusterRole exactly the seed's RBAC, and, applied for real, the observer run
// as its ServiceAccount serving /metrics over HTTPS to a scraper bound to its reader role only.
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { CoreV1Api } from "@kubernetes/client-node";
import { repoRoot, typeScript } from "../../support/binaries.ts";
import { kubectlOk } from "../../support/kubectl.ts";
import { servedPort } from "../../support/operator.ts";
import { ManagedProcess } from "../../support/process.ts";
import { scrape, scrapeAsBoundReader } from "../../support/scrape.ts";
import { eventually } from "../../support/wait.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { installCrdFiles } from "../../support/manifests.ts";
import { assertDryRunAccepts, find, grants, product, render } from "../../support/rendered.ts";

describe("the Kargo observer's install manifests in config/kargo-observer", () => {
  let plane: ControlPlane;
  const file = () => join(plane.dir, "kargo-observer.yaml");

  before(async () => {
    plane = await ControlPlane.start();
    await installCrdFiles(plane.kubeConfig(), [join(repoRoot, "test/e2e/kargo/crds.yaml")]);
  });
  after(() => plane?.stop());

  it("render, pass a server-side dry run, and grant the seed's RBAC and nothing more", async (t) => {
    const { text, objects } = await render(plane, "config/kargo-observer");
    await writeFile(file(), text);
    // A dry run creates no namespace, and the namespaced objects need theirs.
    await plane
      .kubeConfig()
      .makeApiClient(CoreV1Api)
      .createNamespace({ body: { metadata: { name: "kargo-argocd-observer" } } });
    await assertDryRunAccepts(t, plane, file(), objects);

    const role = find(objects, "ClusterRole", "kargo-argocd-observer");
    assert.deepEqual(
      grants(role.rules ?? []),
      [
        ...product(["argoproj.io"], ["applications"], ["get", "list", "watch"]),
        ...product(
          ["kargo.akuity.io"],
          ["stages", "freights", "warehouses", "promotions"],
          ["get", "list", "watch"],
        ),
        ...product(["kargo.akuity.io"], ["promotions"], ["create"]),
        // Kargo's virtual verb, checked by its admission webhook, never by the API server.
        ...product(["kargo.akuity.io"], ["stages"], ["promote"]),
        ...product(["events.k8s.io"], ["events"], ["create", "patch"]),
      ].sort(),
    );
    // Its /metrics asks the API server about each scraper, as the operator's does.
    assert.deepEqual(
      grants(find(objects, "ClusterRole", "kargo-argocd-observer-metrics-auth").rules ?? []),
      [
        ...product(["authentication.k8s.io"], ["tokenreviews"], ["create"]),
        ...product(["authorization.k8s.io"], ["subjectaccessreviews"], ["create"]),
      ].sort(),
    );
    assert.deepEqual(find(objects, "ClusterRole", "kargo-argocd-observer-metrics-reader").rules, [
      { nonResourceURLs: ["/metrics"], verbs: ["get"] },
    ]);
    const lease = find(objects, "Role", "kargo-argocd-observer-leader-election");
    assert.equal(lease.metadata.namespace, "kargo-argocd-observer", "its Lease only in its own namespace");
    const deployment = find(objects, "Deployment", "kargo-argocd-observer");
    const container = (
      deployment.spec as { template: { spec: { containers: { command?: string[]; args?: string[] }[] } } }
    ).template.spec.containers[0]!;
    assert.deepEqual(container.command, ["node", "dist/kargo-observer.mjs"]);
    assert.ok(container.args?.includes("--leader-elect=true"));
    assert.ok(container.args?.includes("--metrics-bind-address=:8443"));
  });

  it("applied for real, the observer as its ServiceAccount serves /metrics over HTTPS only to a scraper bound to its reader role", async () => {
    await kubectlOk(plane, "apply", "--server-side", "-f", file());
    const namespace = "kargo-argocd-observer";
    const identity = await plane.serviceAccountToken(namespace, "kargo-argocd-observer");
    const logFile = join(plane.dir, "kargo-observer.log");
    const observer = ManagedProcess.start({
      name: "kargo-argocd-observer",
      command: process.execPath,
      args: [
        ...typeScript,
        join(repoRoot, "cmd/kargo-observer.ts"),
        "--metrics-bind-address=127.0.0.1:0",
        "--health-probe-bind-address=127.0.0.1:0",
      ],
      env: { ...process.env, KUBECONFIG: identity.kubeconfigPath, POD_NAMESPACE: namespace },
      cwd: repoRoot,
      logFile,
    });
    try {
      const metricsPort = await servedPort(observer, logFile, "metrics");
      const url = `https://127.0.0.1:${metricsPort}/metrics`;
      await eventually(
        async () => {
          observer.assertRunning();
          return await scrape(url).catch(() => undefined);
        },
        { description: "the observer's metrics server to answer" },
      );
      const scraped = await scrapeAsBoundReader(
        plane,
        url,
        "kargo-argocd-observer-metrics-reader",
        "observer-scraper",
      );
      assert.match(scraped.body, /^gitopsreverser_leader /m);
    } finally {
      await observer.stop();
    }
  });
});
