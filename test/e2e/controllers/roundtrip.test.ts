// The round trip of every character class through Git for kinds beyond the built-in namespaced
// ones the values suite uses: a kind a CRD defines, and a cluster-scoped kind (a CRD too, so any
// string can sit in its spec), mirrored through a WatchRule and a ClusterWatchRule. What Git
// holds is read back by the real kubectl (Go's YAML reader, sent to the API server as JSON) and,
// for values kustomize can carry, by the pinned kustomize building a folder around the file: both
// must give the live object's spec and annotations (docs/sanitize.md). The operator runs as it
// ships: its ServiceAccount under config/rbac's roles, granted read of the two kinds only.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, type KubeConfig, type KubernetesObject } from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";
import { clusterWatchRules, kubeProviders } from "../../../generated/v1alpha3/index.ts";
import { needsEscaping } from "../../../internal/sanitize/yamlstrings.ts";
import { kustomizeBinary } from "../../support/binaries.ts";
import { awkwardValue, type Reader } from "../../support/characters.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { GitServer } from "../../support/gitserver.ts";
import { kubectlOk } from "../../support/kubectl.ts";
import { installCrdFiles, installCrds } from "../../support/manifests.ts";
import { applyMirror, mirrorFieldManager } from "../../support/mirror.ts";
import { startOperator } from "../../support/operator.ts";
import { seededRandom } from "../../support/random.ts";
import { shippedOperatorIdentity } from "../../support/shippedrbac.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";
import { eventually } from "../../support/wait.ts";

const run = promisify(execFile);
const namespace = "roundtrip";
const user = { username: "gitops", password: "git-password-never-in-git" };
const folder = "clusters/roundtrip";
const group = "roundtrip.example.com";

/** A CRD whose spec holds anything: `scope` Namespaced (widgets) or Cluster (gadgets). */
const crd = (plural: string, kind: string, scope: "Namespaced" | "Cluster") => ({
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: `${plural}.${group}` },
  spec: {
    group,
    scope,
    names: { plural, singular: kind.toLowerCase(), kind, listKind: `${kind}List` },
    versions: [
      {
        name: "v1",
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: "object",
            properties: { spec: { type: "object", "x-kubernetes-preserve-unknown-fields": true } },
          },
        },
      },
    ],
  },
});

interface Made {
  kind: "Widget" | "Gadget";
  name: string;
  through: Reader;
}
const resourceOf = { Widget: `widgets.${group}`, Gadget: `gadgets.${group}` };

describe("the round trip of every character through Git, beyond the built-in kinds", () => {
  let plane: ControlPlane;
  let git: GitServer;
  let kc: KubeConfig;
  let operator: ReturnType<typeof startOperator>;
  let workerRoot: string;
  let scratch: string;

  const fileIn = (name: string, text: string) => {
    const file = join(scratch, name);
    writeFileSync(file, text);
    return file;
  };
  const live = async ({ kind, name }: Made): Promise<KubernetesObject & { spec?: unknown }> =>
    JSON.parse(
      await kubectlOk(
        plane,
        "get",
        ...(kind === "Widget" ? ["-n", namespace] : []),
        resourceOf[kind],
        name,
        "-o",
        "json",
      ),
    ) as KubernetesObject & { spec?: unknown };
  /** The file Git holds `made` in, wherever placement put it (a cluster-scoped kind has no namespace folder). */
  const fileOf = async (made: Made): Promise<string | undefined> => {
    const files = await git.listFiles("state", "main", folder);
    const matches = files.filter((f) => basename(f) === `${made.name}.yaml` && f.includes(`/${group}/`));
    assert.ok(matches.length <= 1, `${made.name} is in one file: ${matches.join(", ")}`);
    return matches[0];
  };

  before(async () => {
    [plane, git] = await Promise.all([ControlPlane.start(), GitServer.start({ users: [user] })]);
    kc = plane.kubeConfig();
    scratch = makeOwnedTempDir("roundtrip");
    await installCrds(kc);
    const crds = fileIn(
      "crds.yaml",
      [crd("widgets", "Widget", "Namespaced"), crd("gadgets", "Gadget", "Cluster")]
        .map((c) => JSON.stringify(c))
        .join("\n---\n"),
    );
    await installCrdFiles(kc, [crds]);
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
    const url = await git.createRepository("state");
    await applyMirror(kc, namespace, url, user, [
      { name: "roundtrip", path: folder, rules: [{ apiGroups: [group], resources: ["widgets"] }] },
    ]);
    // The KubeProvider admits the cluster-scoped gadgets: a grant names every cluster resource.
    await kubeProviders(kc).apply(
      {
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "KubeProvider",
        metadata: { name: "self", namespace },
        spec: {
          inCluster: {},
          allowedGitTargets: [
            {
              consumerNamespaces: { from: "Same" },
              clusterResources: [{ apiGroups: [group], resources: ["gadgets"] }],
            },
          ],
        },
      },
      mirrorFieldManager,
    );
    await clusterWatchRules(kc).apply(
      {
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "ClusterWatchRule",
        metadata: { name: "roundtrip-gadgets" },
        spec: {
          gitTargetRef: { name: "roundtrip", namespace },
          rules: [{ apiGroups: [group], resources: ["gadgets"] }],
        },
      },
      mirrorFieldManager,
    );
    workerRoot = makeOwnedTempDir("workers");
    // As a user installs it: its ServiceAccount under config/rbac's roles, reading exactly the
    // two kinds, as the ClusterRole a user labels to aggregate into gitops-reverser-watched.
    const watched = [
      { apiGroups: [group], resources: ["widgets", "gadgets"], verbs: ["get", "list", "watch"] },
    ];
    operator = startOperator((await shippedOperatorIdentity(plane, kc, watched)).kubeConfig, {
      inClusterKubeProviders: [`${namespace}/self`],
      workerRoot,
      pushCooldownMs: 0,
    });
  });
  after(async () => {
    await operator?.stop();
    await git?.close();
    await plane?.stop();
    if (workerRoot) removeOwnedTempDir(workerRoot);
    if (scratch) removeOwnedTempDir(scratch);
  });

  it("the round trip holds for a CRD-defined kind and a cluster-scoped kind", async () => {
    const random = seededRandom(20261207);
    const made: Made[] = [];
    for (const kind of ["Widget", "Gadget"] as const) {
      for (let i = 0; i < 4; i++) {
        const m: Made = {
          kind,
          name: `${kind.toLowerCase()}-${i}`,
          through: i < 2 ? "kustomize" : "kubectl",
        };
        const valueOf = () => awkwardValue(random, m.through);
        const object = {
          apiVersion: `${group}/v1`,
          kind,
          metadata: {
            name: m.name,
            ...(kind === "Widget" ? { namespace } : {}),
            annotations: { "example.com/note": valueOf() },
          },
          spec: {
            values: Object.fromEntries(Array.from({ length: 8 }, (_, k) => [`k${k}`, valueOf()])),
            list: [valueOf(), valueOf(), { nested: valueOf() }],
          },
        };
        await kubectlOk(plane, "create", "-f", fileIn(`${m.name}.json`, JSON.stringify(object)));
        made.push(m);
      }
    }

    const root = join(scratch, "kustomize");
    mkdirSync(root, { recursive: true });
    for (const m of made) {
      let seen = "";
      const path = await eventually(
        async () => {
          const rule = await clusterWatchRules(kc).get(undefined, "roundtrip-gadgets");
          seen =
            JSON.stringify(rule?.status?.conditions) +
            " " +
            (await git.listFiles("state", "main", folder)).join(" ");
          return fileOf(m);
        },
        { timeoutMs: 60_000, description: () => `${m.kind} ${m.name} in Git under ${folder}: ${seen}` },
      );
      const within = path.slice(folder.length);
      assert.equal(
        within.includes(`/${namespace}/`),
        m.kind === "Widget",
        `${path}: a namespace folder for a namespaced kind only`,
      );
      const current = await live(m);
      const text = (await git.fileAt("state", "main", path))!;
      assert.equal(needsEscaping(text), false, `${m.name}: only printable characters are in the file`);
      // kubectl, which sends what it read to the API server as JSON.
      const dryRun = JSON.parse(
        await kubectlOk(
          plane,
          "replace",
          "--dry-run=server",
          "-o",
          "json",
          "-f",
          fileIn(`${m.name}.yaml`, text),
        ),
      ) as KubernetesObject & { spec?: unknown };
      assert.deepEqual(dryRun.spec, current.spec, `${m.name}: kubectl reads the live spec`);
      assert.deepEqual(
        dryRun.metadata?.annotations,
        current.metadata?.annotations,
        `${m.name}: and annotations`,
      );
      if (m.through !== "kustomize") continue;
      // kustomize, which Flux builds a folder with.
      writeFileSync(join(root, "object.yaml"), text);
      writeFileSync(join(root, "kustomization.yaml"), "resources:\n  - object.yaml\n");
      const { stdout } = await run(kustomizeBinary(), ["build", root]);
      const built = parseAllDocuments(stdout)[0]!.toJS() as KubernetesObject & { spec?: unknown };
      assert.deepEqual(built.spec, current.spec, `${m.name}: kustomize build reads the live spec`);
      assert.deepEqual(
        built.metadata?.annotations,
        current.metadata?.annotations,
        `${m.name}: and annotations`,
      );
    }
  });
});
