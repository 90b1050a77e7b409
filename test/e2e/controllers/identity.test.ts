import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { PatchStrategy, setHeaderOptions, type CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";
import type { GitServer } from "../../support/gitserver.ts";
import { kubectl } from "../../support/kubectl.ts";
import { grantAllSourceNamespaces } from "../../support/mirror.ts";
import {
  folderBranches,
  startMirrorEnvironment,
  type FolderBranches,
  type MirrorEnvironment,
} from "../../support/mirrorenv.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";
import * as fixtures from "./fixtures/identityfolders.ts";
import { clients, condition, conditionOf } from "./helpers.ts";

const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
// Each scenario mirrors its own namespace into its own branch; the -b namespaces hold what a
// cluster-wide rule also follows.
const namespaces = ["kns", "argo", "argo-b", "amb", "amb-b"];

describe("documents are matched by the identity the folder renders them with", () => {
  let env: MirrorEnvironment;
  let git: GitServer;
  let kc: KubeConfig;
  let core: CoreV1Api;
  const temp: string[] = [];

  let show: FolderBranches["show"], head: FolderBranches["head"], inGit: FolderBranches["inGit"];
  let settled: FolderBranches["settled"], mirror: FolderBranches["seed"];
  /** Lets the namespace's targets watch every namespace, as an Argo CD-style cluster-wide rule needs. */
  const grantAllNamespaces = (namespace: string) => grantAllSourceNamespaces(kc, namespace);
  const createConfigMaps = async (text: string, namespace: string) => {
    for (const doc of parseAllDocuments(text)) {
      const { metadata, data } = doc.toJS() as { metadata: { name: string }; data: Record<string, string> };
      await core.createNamespacedConfigMap({ namespace, body: { metadata, data } });
    }
  };
  const changedLines = async (branch: string, from: string, path: string) =>
    (await git.gitIn("state", ["diff", "--unified=0", from, branch, "--", path]))
      .split("\n")
      .filter((l) => /^[-+][^-+]/.test(l));
  /** The other files of the folder that hold a document of this name. */
  const copiesOf = async (branch: string, folder: string, name: string, except: string) => {
    const copies: string[] = [];
    for (const path of await git.listFiles("state", branch, folder)) {
      if (path !== except && (await show(branch, path))?.includes(`name: ${name}\n`)) copies.push(path);
    }
    return copies;
  };

  before(async () => {
    env = await startMirrorEnvironment(namespaces);
    ({ git, kc, core } = env);
    ({ show, head, inGit, settled, seed: mirror } = folderBranches(env));
  });
  after(async () => {
    await env?.stop();
    for (const dir of temp) removeOwnedTempDir(dir);
  });

  it("a kustomization namespace sets the identity of namespace-less documents", async () => {
    const folder = "clusters/dev/kns";
    await createConfigMaps(fixtures.app, "kns");
    await mirror(
      "kns",
      {
        [`${folder}/kustomization.yaml`]: fixtures.namespacedKustomization,
        [`${folder}/app.yaml`]: fixtures.app,
      },
      { path: folder, rules: [{ apiGroups: [""], resources: ["configmaps"] }] },
    );
    await conditionOf(clients(kc).targets, "kns", "kns", "Ready", "True", undefined, 60_000);
    const seeded = await settled("kns");
    assert.deepEqual(
      await git.listFiles("state", "kns", folder),
      [`${folder}/app.yaml`, `${folder}/kustomization.yaml`],
      "the snapshot found both documents: nothing appended",
    );

    await core.patchNamespacedConfigMap(
      { namespace: "kns", name: "settings", body: { data: { mode: "fast" } } },
      mergePatch,
    );
    await inGit("kns", `${folder}/app.yaml`, (c) => c.includes('"fast"'), "settings edited in place");
    const changed = await changedLines("kns", seeded, `${folder}/app.yaml`);
    assert.equal(changed.length, 2, changed.join("\n"));
    assert.match(changed[1]!, /^\+ {2}mode: +"fast" +# fast needs the new cache$/);
    assert.doesNotMatch(changed.join("\n"), /namespace/, "no namespace added to the document");

    await core.createNamespacedConfigMap({
      namespace: "kns",
      body: { metadata: { name: "fresh" }, data: { a: "b" } },
    });
    const fresh = await inGit(
      "kns",
      `${folder}/fresh-configmap.yaml`,
      (c) => c.includes("a: b"),
      "the new ConfigMap",
    );
    assert.doesNotMatch(fresh, /namespace/, "the kustomization sets its namespace");
    await inGit("kns", `${folder}/kustomization.yaml`, (c) => c.includes("- fresh-configmap.yaml"), "listed");
    await settled("kns");

    const dir = makeOwnedTempDir("kns-folder");
    temp.push(dir);
    for (const path of await git.listFiles("state", "kns", folder)) {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), (await show("kns", path)) ?? "");
    }
    const built = await kubectl(env.plane, "kustomize", join(dir, folder));
    assert.equal(built.code, 0, built.stderr);
    const rendered = parseAllDocuments(built.stdout).map(
      (d) => d.toJS() as { metadata: { name: string; namespace: string } },
    );
    assert.deepEqual(rendered.map((o) => `${o.metadata.namespace}/${o.metadata.name}`).sort(), [
      "kns/flags",
      "kns/fresh",
      "kns/settings",
    ]);
  });

  it("an unambiguous namespace-less document is matched", async () => {
    const folder = "clusters/dev/argo";
    const path = `${folder}/app.yaml`;
    await createConfigMaps(fixtures.destinationApp("argo-demo"), "argo");
    // Followed too, in another namespace, under another name: it does not make "shared" ambiguous.
    await core.createNamespacedConfigMap({
      namespace: "argo-b",
      body: { metadata: { name: "other", labels: { app: "argo-demo" } }, data: { a: "b" } },
    });
    await mirror(
      "argo",
      { [path]: fixtures.destinationApp("argo-demo") },
      {
        path: folder,
        rules: [
          {
            apiGroups: [""],
            resources: ["configmaps"],
            sourceNamespace: "*",
            objectSelector: { matchLabels: { app: "argo-demo" } },
          },
        ],
      },
    );
    // After the mirror, whose KubeProvider grants only the namespace of the same name.
    await grantAllNamespaces("argo");
    await inGit("argo", `${folder}/argo-b/configmaps/other.yaml`, (c) => c.includes("a: b"), "the other one");
    const seeded = await settled("argo");
    assert.equal(await show("argo", path), fixtures.destinationApp("argo-demo"), "the snapshot matched both");

    await core.patchNamespacedConfigMap(
      { namespace: "argo", name: "shared", body: { data: { colour: "green" } } },
      mergePatch,
    );
    await inGit("argo", path, (c) => c.includes("green"), "shared edited in place");
    assert.deepEqual(await changedLines("argo", seeded, path), [
      "-  colour:   blue    # the brand colour",
      "+  colour:   green    # the brand colour",
    ]);
    await settled("argo");
    assert.deepEqual(await copiesOf("argo", folder, "shared", path), [], "no second document for shared");
    assert.deepEqual(await copiesOf("argo", folder, "banner", path), [], "no second document for banner");
  });

  it("an ambiguous one is refused, never duplicated", async () => {
    const folder = "clusters/dev/amb";
    const path = `${folder}/app.yaml`;
    await createConfigMaps(fixtures.destinationApp("amb-demo"), "amb");
    await core.createNamespacedConfigMap({
      namespace: "amb-b",
      body: { metadata: { name: "shared", labels: { app: "amb-demo" } }, data: { colour: "red" } },
    });
    await mirror(
      "amb",
      { [path]: fixtures.destinationApp("amb-demo") },
      {
        path: folder,
        rules: [
          {
            apiGroups: [""],
            resources: ["configmaps"],
            sourceNamespace: "*",
            objectSelector: { matchLabels: { app: "amb-demo" } },
          },
        ],
      },
    );
    await grantAllNamespaces("amb");
    const seeded = await head("amb");
    const { targets } = clients(kc);
    const refused = await conditionOf(
      targets,
      "amb",
      "amb",
      "GitPathAccepted",
      "False",
      "UnsupportedContent",
      60_000,
    );
    const message = condition(refused, "GitPathAccepted")?.message ?? "";
    assert.match(message, /clusters\/dev\/amb\/app\.yaml/);
    assert.match(message, /document 0, ConfigMap shared, which the target follows in amb, amb-b/);
    assert.match(message, /set metadata\.namespace/);
    assert.equal(condition(refused, "Stalled")?.status, "True");
    await core.patchNamespacedConfigMap(
      { namespace: "amb", name: "shared", body: { data: { colour: "green" } } },
      mergePatch,
    );
    await settled("amb");
    assert.equal(await head("amb"), seeded, "nothing committed into a refused folder");

    const fixed = fixtures
      .destinationApp("amb-demo")
      .replace("  name: shared\n", "  name: shared\n  namespace: amb\n");
    await git.pushForeignCommit("state", {
      branch: "amb",
      files: { [path]: fixed },
      message: "Say which shared",
    });
    await conditionOf(targets, "amb", "amb", "GitPathAccepted", "True", undefined, 60_000);
    await inGit("amb", path, (c) => c.includes("green"), "what waited, written into the document");
    await inGit("amb", `${folder}/amb-b/configmaps/shared.yaml`, (c) => c.includes("red"), "amb-b's own");
    await settled("amb");
    assert.deepEqual(
      await copiesOf("amb", folder, "shared", path),
      [`${folder}/amb-b/configmaps/shared.yaml`],
      "amb's shared was never written a second time",
    );
    assert.deepEqual(await copiesOf("amb", folder, "banner", path), []);
  });
});
