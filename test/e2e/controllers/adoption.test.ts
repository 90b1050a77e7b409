// Adoption: a GitTarget pointed at a folder an applier already applied. What clients set is what
// the folder holds; what the API server defaulted (imagePullPolicy, strategy, protocol: TCP...)
// is nobody's intent, so a folder that agrees with the cluster is left as it is, and a new
// document carries only what clients set, which applied elsewhere makes the same object.
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, type KubernetesObject } from "@kubernetes/client-node";
import { gitTargets } from "../../../generated/v1alpha3/index.ts";
import { project } from "../../../internal/sanitize/sanitize.ts";
import { defaultsProofs } from "../../../internal/telemetry/instruments.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import type { GitServer } from "../../support/gitserver.ts";
import { kubectl } from "../../support/kubectl.ts";
import type { MirrorTarget } from "../../support/mirror.ts";
import {
  folderBranches,
  type FolderBranches,
  startMirrorEnvironment,
  type MirrorEnvironment,
} from "../../support/mirrorenv.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";
import { watchEverything } from "../../support/shippedrbac.ts";
import { eventually } from "../../support/wait.ts";
import * as fixtures from "./fixtures/adoptionfolders.ts";
import { snapshotsMeasured } from "./helpers.ts";

const rules = [
  { apiGroups: ["apps"], resources: ["deployments"] },
  { apiGroups: [""], resources: ["services", "configmaps"] },
];

describe("adoption writes only what clients set", () => {
  let env: MirrorEnvironment;
  let git: GitServer;
  const scratch: string[] = [];

  const show = (branch: string, path: string) => git.fileAt("state", branch, path);
  /** A scratch directory holding `files`, for kubectl to apply. */
  const folderOf = (files: Record<string, string>) => {
    const dir = makeOwnedTempDir("adoption");
    scratch.push(dir);
    for (const [path, content] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), content);
    }
    return dir;
  };
  const apply = async (plane: ControlPlane, ...args: string[]) => {
    const result = await kubectl(plane, "apply", "--server-side", ...args);
    assert.equal(result.code, 0, result.stderr);
  };
  let settled: FolderBranches["settled"], seed: FolderBranches["seed"];
  /** Pushes the folder as its author would, then mirrors the namespace into it; returns that commit. */
  const adopt = async (branch: string, files: Record<string, string>, target: Omit<MirrorTarget, "name">) => {
    const seeded = await seed(branch, files, target);
    assert.ok(seeded, `the ${branch} branch`);
    return seeded;
  };
  before(async () => {
    // The operator proves server defaults by dry-run creates: granted as docs/rbac.md shows a
    // user granting it, beside reading what it mirrors.
    env = await startMirrorEnvironment(
      ["plain", "kust", "fresh", "csa"],
      {},
      {
        watched: [
          ...watchEverything,
          { apiGroups: ["apps"], resources: ["deployments"], verbs: ["create"] },
          { apiGroups: [""], resources: ["services"], verbs: ["create"] },
        ],
      },
    );
    git = env.git;
    ({ settled, seed } = folderBranches(env));
  });
  after(async () => {
    await env?.stop();
    for (const dir of scratch) removeOwnedTempDir(dir);
  });

  it("adopting a folder that matches live makes no commit", async () => {
    const plain = { "web.yaml": fixtures.plainWeb, "settings.yaml": fixtures.plainSettings };
    const kust = {
      "kustomization.yaml": fixtures.kustomization,
      "api.yaml": fixtures.kustomizeApi,
      "config.yaml": fixtures.kustomizeConfig,
    };
    // What the applier did: the plain files as they are, the kustomize folder as it builds.
    await apply(env.plane, "-f", folderOf(plain));
    await apply(env.plane, "-k", folderOf(kust));
    const inFolder = (folder: string, files: Record<string, string>) =>
      Object.fromEntries(Object.entries(files).map(([path, content]) => [`${folder}/${path}`, content]));

    const plainSeeded = await adopt("plain", inFolder("clusters/dev/plain", plain), {
      path: "clusters/dev/plain",
      rules,
    });
    const kustSeeded = await adopt("kust", inFolder("clusters/dev/kust", kust), {
      path: "clusters/dev/kust",
      rules,
    });
    await snapshotsMeasured(env.kc, "plain", "plain", 3);
    await snapshotsMeasured(env.kc, "kust", "kust", 3);
    assert.equal(await settled("plain"), plainSeeded, "no commit into a plain folder that agrees with live");
    assert.equal(
      await settled("kust"),
      kustSeeded,
      "no commit into a kustomize folder that agrees with live",
    );

    const scaled = await kubectl(env.plane, "scale", "deployment/api", "-n", "kust", "--replicas=3");
    assert.equal(scaled.code, 0, scaled.stderr);
    await eventually(
      async () => (await show("kust", "clusters/dev/kust/api.yaml"))?.includes("replicas: 3"),
      {
        timeoutMs: 60_000,
        description: "the scaled Deployment in Git",
      },
    );
    // The first content commit brings the folder's bootstrap files along; the manifests change by one line.
    const diff = await git.gitIn("state", [
      "diff",
      "--unified=0",
      kustSeeded,
      "kust",
      "--",
      ...Object.keys(kust).map((p) => `clusters/dev/kust/${p}`),
    ]);
    const changed = diff.split("\n").filter((l) => /^[-+][^-+]/.test(l));
    assert.deepEqual(changed, ["-  replicas: 1", "+  replicas: 3"]);
  });

  it("adopting a folder applied client-side, as Argo CD applies by default, makes no commit", async () => {
    // Argo CD syncs with client-side apply unless told ServerSideApply=true: a create of the whole
    // manifest, then three-way patches, recorded as Update entries of its own field manager. Those
    // entries own exactly what the manifest set, so the defaults stay nobody's here too.
    const inCsa = (text: string) => text.replaceAll("namespace: plain", "namespace: csa");
    const files = { "web.yaml": inCsa(fixtures.plainWeb), "settings.yaml": inCsa(fixtures.plainSettings) };
    const applied = await kubectl(
      env.plane,
      "apply",
      "--field-manager=argocd-controller",
      "-f",
      folderOf(files),
    );
    assert.equal(applied.code, 0, applied.stderr);
    const live = await kubectl(
      env.plane,
      "get",
      "deployment/storefront",
      "-n",
      "csa",
      "-o",
      "json",
      "--show-managed-fields",
    );
    const managers = (JSON.parse(live.stdout) as KubernetesObject).metadata?.managedFields ?? [];
    assert.deepEqual(
      managers.map((m) => [m.manager, m.operation]),
      [["argocd-controller", "Update"]],
      "a client-side apply's own record",
    );
    const folder = "clusters/dev/csa";
    const seeded = await adopt(
      "csa",
      Object.fromEntries(Object.entries(files).map(([path, content]) => [`${folder}/${path}`, content])),
      { path: folder, rules },
    );
    await snapshotsMeasured(env.kc, "csa", "csa", 3);
    const tip = await settled("csa");
    const diff = tip === seeded ? "" : await git.gitIn("state", ["diff", seeded, "csa"]);
    assert.equal(diff, "", "no commit into a folder that agrees with live");
  });

  it("a new document omits server defaults and round-trips", async () => {
    const folder = "clusters/dev/fresh";
    // Applied the way Flux and `kubectl apply --server-side` apply: the field set is what the
    // manifest says. (A create or an update owns the defaults too: built-in types are defaulted
    // as the request is decoded, before field management sees it.)
    await apply(env.plane, "-f", folderOf({ "orders.yaml": fixtures.freshOrders }));
    await adopt("fresh", {}, { path: folder, rules });
    const paths = ["apps/deployments/orders", "services/orders", "configmaps/orders-settings"].map(
      (p) => `fresh/${p}.yaml`,
    );
    const written = await eventually(
      async () => {
        const contents = await Promise.all(paths.map((p) => show("fresh", `${folder}/${p}`)));
        return contents.every((c) => c !== undefined) && contents;
      },
      { timeoutMs: 60_000, description: "the three new documents" },
    );
    for (const content of written) {
      assert.doesNotMatch(
        content,
        /imagePullPolicy|terminationMessagePath|revisionHistoryLimit|protocol|sessionAffinity|ipFamilies|dnsPolicy/,
        content,
      );
    }

    // Applied to a second, empty control plane, the folder makes the same objects.
    const second = await ControlPlane.start();
    try {
      await second
        .kubeConfig()
        .makeApiClient(CoreV1Api)
        .createNamespace({ body: { metadata: { name: "fresh" } } });
      await apply(second, "-f", folderOf(Object.fromEntries(paths.map((p, i) => [p, written[i]!]))), "-R");
      const read = async (plane: ControlPlane, resource: string, name: string) => {
        const got = await kubectl(plane, "get", resource, name, "-n", "fresh", "-o", "json");
        assert.equal(got.code, 0, got.stderr);
        return project(JSON.parse(got.stdout) as KubernetesObject);
      };
      for (const [resource, name] of [
        ["deployment", "orders"],
        ["service", "orders"],
        ["configmap", "orders-settings"],
      ] as const) {
        assert.deepEqual(
          await read(second, resource, name),
          await read(env.plane, resource, name),
          `${resource} ${name}`,
        );
      }
      const namespaces = await Promise.all(
        [second, env.plane].map(async (plane) =>
          project(
            JSON.parse(
              (await kubectl(plane, "get", "namespace", "fresh", "-o", "json")).stdout,
            ) as KubernetesObject,
          ),
        ),
      );
      assert.deepEqual(namespaces[0]!.object, {
        apiVersion: "v1",
        kind: "Namespace",
        metadata: { name: "fresh" },
      });
      assert.deepEqual(namespaces[0], namespaces[1]);
    } finally {
      await second.stop();
    }
  });
});

describe("adoption under the chart's RBAC alone", () => {
  let env: MirrorEnvironment;
  const scratch: string[] = [];
  before(async () => {
    // The shipped roles, the watched one widened to read every kind, and no create.
    env = await startMirrorEnvironment(["shipped"]);
  });
  after(async () => {
    await env?.stop();
    for (const dir of scratch) removeOwnedTempDir(dir);
  });

  it("under the chart's RBAC, adopting a Flux-applied folder reports DefaultsProofForbidden", async () => {
    // Applied server-side, as kustomize-controller applies: the defaults are nobody's.
    const web = fixtures.plainWeb.replaceAll("namespace: plain", "namespace: shipped");
    const dir = makeOwnedTempDir("adoption-shipped");
    scratch.push(dir);
    writeFileSync(join(dir, "web.yaml"), web);
    const applied = await kubectl(
      env.plane,
      "apply",
      "--server-side",
      "--field-manager=kustomize-controller",
      "-f",
      dir,
    );
    assert.equal(applied.code, 0, applied.stderr);
    const forbiddenBefore = await forbiddenProofs();
    await folderBranches(env).seed(
      "shipped",
      { "clusters/dev/shipped/web.yaml": web },
      {
        path: "clusters/dev/shipped",
        rules: [{ apiGroups: ["apps"], resources: ["deployments"] }],
      },
    );
    const running = await eventually(
      async () => {
        const target = await gitTargets(env.kc).get("shipped", "shipped");
        const condition = target?.status?.conditions?.find((c) => c.type === "StreamsRunning");
        return condition?.reason === "DefaultsProofForbidden" && condition;
      },
      { timeoutMs: 60_000, description: "StreamsRunning to say DefaultsProofForbidden" },
    );
    assert.equal(running.status, "True");
    assert.match(running.message, /may not create deployments\.apps/);
    assert.ok((await forbiddenProofs()) > forbiddenBefore, "a forbidden proof counted");
  });
});

/** gitopsreverser_defaults_proofs_total{outcome="forbidden"}, as this process counted it. */
async function forbiddenProofs(): Promise<number> {
  return (await defaultsProofs.get()).values.find((v) => v.labels.outcome === "forbidden")?.value ?? 0;
}
