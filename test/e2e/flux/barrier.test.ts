// The apply barrier with two GitTargets on one branch, with the real Flux controllers: a claim's
// applier is asked for nothing until the worker has published every resync it holds for every
// GitTarget the applier covers (applier-claims.md, "its initial snapshots are published"). One
// Kustomization applies the folders of two GitTargets; while the operator is down both objects
// are edited live; at start the second GitTarget's watch is held back (an API server slow to
// answer it), so the first GitTarget's snapshot is published alone. An apply asked then would
// run Git's old value of the second folder over its live edit; the barrier waits for both.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Watch, type V1ConfigMap } from "@kubernetes/client-node";
import { fluxClaims, type ApplyOperation } from "../../../generated/v1alpha3/index.ts";
import { revisionHolds } from "../../../internal/applier/flux/outcome.ts";
import { startApiProxy } from "../../support/apiproxy.ts";
import {
  fluxClaim,
  fluxSource,
  kustomization,
  requestReconcile,
  startFlux,
  type Flux,
} from "../../support/flux.ts";
import { applyMirror, mirrorFieldManager } from "../../support/mirror.ts";
import { mirrorUser, startMirrorEnvironment, type MirrorEnvironment } from "../../support/mirrorenv.ts";
import { startOwnedOperator } from "../../support/operator.ts";
import { eventually } from "../../support/wait.ts";

const namespace = "shop";
const folders = ["front", "back"] as const;
type Folder = (typeof folders)[number];
const fileOf = (folder: Folder) => `clusters/shop/${folder}/settings.yaml`;
const settingsFile = (folder: Folder, mode: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${folder}-settings\n  namespace: ${namespace}\n  labels:\n    app: ${folder}\ndata:\n  mode: ${mode}\n`;

describe("the apply barrier holds until every GitTarget the applier covers has published, with the real Flux controllers", () => {
  let env: MirrorEnvironment;
  let flux: Flux;

  const operationOf = async (): Promise<ApplyOperation | undefined> =>
    (await fluxClaims(env.kc).get(namespace, "shop"))?.status?.operation;
  const modeOf = async (folder: Folder) =>
    (await env.core.readNamespacedConfigMap({ namespace, name: `${folder}-settings` }).catch(() => undefined))
      ?.data?.mode;
  const inGit = async (folder: Folder, ref = "main") =>
    (await env.git.fileAt("state", ref, fileOf(folder))) ?? "";
  const tip = async () => (await env.git.branchHead("state", "main"))!;
  const appliedAtTip = async () => {
    const [operation, head] = await Promise.all([operationOf(), tip()]);
    return operation?.phase === "Succeeded" && operation.commit === head && operation;
  };

  before(async () => {
    env = await startMirrorEnvironment([namespace]);
    flux = await startFlux(env.plane);
    await env.git.pushForeignCommit("state", {
      files: Object.fromEntries(folders.map((f) => [fileOf(f), settingsFile(f, "start")])),
      message: "The folders Flux applies",
    });
    await fluxSource(env, namespace, mirrorUser);
    await flux.kustomizations(env.kc).apply(kustomization(namespace, "shop", "./clusters/shop"), "kubectl");
    await eventually(async () => (await modeOf("front")) === "start" && (await modeOf("back")) === "start", {
      timeoutMs: 60_000,
      description: "Flux applied both folders",
    });
    // Two GitTargets on one branch, one claim: its Kustomization applies both folders.
    await applyMirror(
      env.kc,
      namespace,
      env.url,
      mirrorUser,
      folders.map((folder) => ({
        name: folder,
        path: `clusters/shop/${folder}`,
        rules: [
          {
            apiGroups: [""],
            resources: ["configmaps"],
            objectSelector: { matchLabels: { app: folder } },
          },
        ],
        applierClaimRef: { kind: "FluxClaim" as const, name: "shop" },
      })),
    );
    await fluxClaims(env.kc).apply(fluxClaim(namespace, "shop"), mirrorFieldManager);
    await eventually(appliedAtTip, {
      timeoutMs: 90_000,
      description: "the converge at start applied the tip",
    });
  });
  after(async () => {
    await flux?.stop();
    await env?.stop();
  });

  it("no apply is asked for before every resync the worker holds is published, with two GitTargets on one branch", async () => {
    await env.operator.stop();
    for (const folder of folders)
      await env.core.patchNamespacedConfigMap({
        namespace,
        name: `${folder}-settings`,
        body: [{ op: "replace", path: "/data/mode", value: "edited-while-down" }],
      });
    // Every value the cluster runs for the back folder's object from here on.
    const backModes: string[] = [];
    const from = (await env.core.readNamespacedConfigMap({ namespace, name: "back-settings" })).metadata!
      .resourceVersion!;
    const backWatch = await new Watch(env.kc).watch(
      `/api/v1/namespaces/${namespace}/configmaps`,
      { fieldSelector: "metadata.name=back-settings", resourceVersion: from },
      (_phase: string, cm: V1ConfigMap) => backModes.push(cm.data?.mode ?? ""),
      () => undefined,
    );

    // The back GitTarget's watch is answered only once released.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const proxy = await startApiProxy(
      env.operatorKc,
      () => false,
      (r) =>
        r.method === "GET" &&
        r.path.includes("/configmaps") &&
        decodeURIComponent(r.path).includes("app=back")
          ? released
          : undefined,
    );
    const operator = startOwnedOperator(proxy.kubeConfig, "barrier", {
      ...env.operatorSettings,
    });
    try {
      await eventually(async () => (await inGit("front")).includes("mode: edited-while-down"), {
        timeoutMs: 60_000,
        description: "the front GitTarget's snapshot published",
      });
      // The converge at start is due for the tip that snapshot made. Flux's source is made to
      // hold that tip, so an apply asked for now would resume the Kustomization at once.
      const head = await tip();
      await requestReconcile(flux.gitRepositories(env.kc), namespace, "state");
      await eventually(
        async () =>
          revisionHolds(
            (await flux.gitRepositories(env.kc).get(namespace, "state"))?.status?.artifact?.revision,
            head,
          ),
        { timeoutMs: 60_000, description: "the GitRepository's artifact at the tip" },
      );
      release();

      const operation = await eventually(
        async () => (await inGit("back")).includes("mode: edited-while-down") && appliedAtTip(),
        {
          timeoutMs: 90_000,
          description: () =>
            `the back folder's snapshot published, and the converge applied; the back object ran ${backModes.join(", ")}`,
        },
      );
      assert.match(
        await inGit("back", operation.commit),
        /mode: edited-while-down/,
        "the applied commit holds it",
      );
      assert.match(await inGit("front", operation.commit), /mode: edited-while-down/);
      assert.equal(await modeOf("back"), "edited-while-down");
      assert.equal(await modeOf("front"), "edited-while-down");
      assert.deepEqual(
        backModes.filter((mode) => mode !== "edited-while-down"),
        [],
        "the cluster never ran Git's old value of the back folder again",
      );
    } finally {
      release();
      backWatch.abort();
      await operator.stop();
      await proxy.close();
    }
  });
});
