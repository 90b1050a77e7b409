// A write that changes nothing never takes the credit for the edit before it. The API server
// answers a no-op PATCH, an unchanged server-side apply or a scale to the current count with the
// resourceVersion the last real write made, so its audit event names the same version as that
// write's: exactly one request made each version, and it is the one that finished first.
// Against the real audit webhook, with users by client certificate and a ServiceAccount's token.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import { AppsV1Api, CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { stringify } from "yaml";
import { attributionNoops } from "../../../internal/telemetry/instruments.ts";
import { startAttributedMirror, type AttributedMirror } from "../../support/attributedmirror.ts";
import { grantEditing } from "../../support/attributionenv.ts";
import { testenvBinaries } from "../../support/binaries.ts";
import type { TestIdentity } from "../../support/controlplane.ts";
import { eventually } from "../../support/wait.ts";

const run = promisify(execFile);
const namespace = "team-a";
const folder = "clusters/dev";
const configMapFile = (name: string) => `${folder}/${namespace}/configmaps/${name}.yaml`;
const deploymentFile = (name: string) => `${folder}/${namespace}/apps/deployments/${name}.yaml`;
// How long after the edit the no-op comes: the race the audit events must not lose.
const delays = [0, 200, 500];

/** kubectl as `who`; returns what it printed. */
async function kubectlAs(who: TestIdentity, ...args: string[]): Promise<string> {
  const { stdout } = await run(testenvBinaries().kubectl, [
    "--kubeconfig",
    who.kubeconfigPath,
    "-n",
    namespace,
    ...args,
  ]);
  return stdout;
}

/** Waits `ms` milliseconds: the gap between two users' writes is the scenario, not a wait for a condition. */
const gap = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** bob's real edit of the ConfigMap `name`; returns the resourceVersion it made. */
const bobEditsAs = (bob: TestIdentity, name: string) =>
  kubectlAs(
    bob,
    "patch",
    "configmap",
    name,
    "--type=merge",
    "-p",
    '{"data":{"v":"new"}}',
    "-o",
    "jsonpath={.metadata.resourceVersion}",
  );

const noops = async () => (await attributionNoops.get()).values.reduce((sum, { value }) => sum + value, 0);

describe("a write that changes nothing never takes the credit for the edit before it", () => {
  let mirror: AttributedMirror;
  let kc: KubeConfig;
  let alice: TestIdentity;
  let bob: TestIdentity;
  let scaler: TestIdentity;
  const bobEdits = (name: string) => bobEditsAs(bob, name);
  /** The author of the last commit of `path`, once Git holds `text` there. */
  const authorOnceHolds = async (path: string, text: string) => {
    await eventually(async () => (await mirror.show(path))?.includes(text), {
      timeoutMs: 60_000,
      description: `${path} to hold ${text}`,
    });
    return mirror.lastCommit(path, "%an");
  };

  before(async () => {
    mirror = await startAttributedMirror({
      namespace,
      folder,
      rules: [
        { apiGroups: [""], resources: ["configmaps"] },
        { apiGroups: ["apps"], resources: ["deployments"] },
      ],
    });
    kc = mirror.kc;
    const { plane } = mirror;
    [alice, bob, scaler] = await Promise.all([
      plane.mintUser("alice"),
      plane.mintUser("bob"),
      plane.serviceAccountToken(namespace, "scaler"),
    ]);
    await grantEditing(kc, namespace, [
      { kind: "User", name: "alice", apiGroup: "rbac.authorization.k8s.io" },
      { kind: "User", name: "bob", apiGroup: "rbac.authorization.k8s.io" },
      { kind: "ServiceAccount", name: "scaler", namespace },
    ]);
  });
  after(async () => {
    await mirror?.stop();
  });

  for (const delay of delays) {
    it(`a no-op patch after another user's edit does not take its credit (${delay} ms after)`, async () => {
      const name = `patched-${delay}`;
      await kc.makeApiClient(CoreV1Api).createNamespacedConfigMap({
        namespace,
        body: { metadata: { name }, data: { seed: "0" } },
      });
      await mirror.authorOnce(configMapFile(name));
      const before = await noops();
      const edited = await bobEdits(name);
      await gap(delay);
      const unchanged = await kubectlAs(
        alice,
        "patch",
        "configmap",
        name,
        "--type=merge",
        "-p",
        '{"data":{"seed":"0"}}',
        "-o",
        "jsonpath={.metadata.resourceVersion}",
      );
      assert.equal(unchanged, edited, "the API server answered the no-op with the edit's version");
      assert.equal(await authorOnceHolds(configMapFile(name), "v: new"), "bob");
      await eventually(async () => (await noops()) > before, { description: "the no-op counted" });
    });

    it(`an unchanged server-side apply after another user's edit does not take its credit (${delay} ms after)`, async () => {
      const name = `applied-${delay}`;
      const manifest = join(mirror.dir, `${name}.yaml`);
      writeFileSync(
        manifest,
        stringify({
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name, namespace },
          data: { owned: "by-alice" },
        }),
      );
      await kubectlAs(alice, "apply", "--server-side", "-f", manifest);
      await mirror.authorOnce(configMapFile(name));
      const edited = await bobEdits(name);
      await gap(delay);
      const unchanged = await kubectlAs(
        alice,
        "apply",
        "--server-side",
        "-f",
        manifest,
        "-o",
        "jsonpath={.metadata.resourceVersion}",
      );
      assert.equal(unchanged, edited, "the API server answered the unchanged apply with the edit's version");
      assert.equal(await authorOnceHolds(configMapFile(name), "v: new"), "bob");
    });

    it(`a scale to the current count does not take the credit for an annotate (${delay} ms after)`, async () => {
      const name = `scaled-${delay}`;
      await kc.makeApiClient(AppsV1Api).createNamespacedDeployment({
        namespace,
        body: {
          metadata: { name },
          spec: {
            replicas: 2,
            selector: { matchLabels: { app: name } },
            template: {
              metadata: { labels: { app: name } },
              spec: { containers: [{ name: "web", image: "nginx:1.27" }] },
            },
          },
        },
      });
      await mirror.authorOnce(deploymentFile(name));
      // The /scale subresource, as an autoscaler writes it: one PATCH, no read first. Its first
      // write takes ownership of spec.replicas, which is a change; the next, to the same count,
      // changes nothing.
      const scale = () =>
        kubectlAs(
          scaler,
          "patch",
          "deployment",
          name,
          "--subresource=scale",
          "--type=merge",
          "-p",
          '{"spec":{"replicas":2}}',
          "-o",
          "jsonpath={.metadata.resourceVersion}",
        );
      await scale();
      const annotated = await kubectlAs(
        alice,
        "annotate",
        "deployment",
        name,
        "example.com/reviewed=yes",
        "-o",
        "jsonpath={.metadata.resourceVersion}",
      );
      await gap(delay);
      assert.equal(await scale(), annotated, "the API server answered the scale with the annotate's version");
      assert.equal(await authorOnceHolds(deploymentFile(name), "example.com/reviewed"), "alice");
    });
  }
});
