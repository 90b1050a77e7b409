import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { CoreV1Api } from "@kubernetes/client-node";
import { PatchStrategy, setHeaderOptions, type KubeConfig } from "@kubernetes/client-node";
import type { GitServer } from "../../support/gitserver.ts";
import { applyMirror } from "../../support/mirror.ts";
import {
  mirrorUser as user,
  startMirrorEnvironment,
  type MirrorEnvironment,
} from "../../support/mirrorenv.ts";
import { eventually } from "../../support/wait.ts";
import { clients, condition, conditionOf } from "../controllers/helpers.ts";

const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
// One namespace, one branch and one folder per scenario, in one repository.
const scenarios = ["conflict", "samefile", "deleted", "child", "outage", "refresh"];
const configMap = (name: string, namespace: string, data: Record<string, string>) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: ${namespace}\n` +
  `data:\n${Object.entries(data)
    .map(([k, v]) => `  ${k}: ${v}\n`)
    .join("")}`;

/** ConfigMaps edited ten times each while the Git server is down: fifty in `make soak` (SOAK=1). */
const outageObjects = process.env.SOAK ? 50 : 20;

describe("Git robustness: other authors' commits are never overwritten, and the API's edits are never lost", () => {
  let env: MirrorEnvironment;
  let git: GitServer;
  let kc: KubeConfig;
  let core: CoreV1Api;
  let url: string;

  const show = (branch: string, path: string) => git.fileAt("state", branch, path);
  const inGit = (
    branch: string,
    path: string,
    test: (content: string) => boolean,
    description: string,
    timeoutMs = 60_000,
  ) =>
    eventually(
      async () => {
        const content = await show(branch, path);
        return content !== undefined && test(content) && content;
      },
      { timeoutMs, description },
    );
  const isAncestor = (ancestor: string, branch: string) =>
    git.gitIn("state", ["merge-base", "--is-ancestor", ancestor, branch]).then(
      () => true,
      () => false,
    );
  const mirror = (namespace: string, folder: string, resources = ["configmaps"], parentBranch?: string) =>
    applyMirror(
      kc,
      namespace,
      url,
      user,
      [{ name: namespace, path: folder, rules: [{ apiGroups: [""], resources }] }],
      namespace,
      parentBranch,
    );

  before(async () => {
    env = await startMirrorEnvironment(scenarios, { gitRefreshInterval: 2_000 });
    ({ git, kc, core, url } = env);
  });
  after(() => env?.stop());

  it("a foreign commit pushed between our commit and our push ends with both changes on the branch, and no force-push", async () => {
    const folder = "clusters/conflict";
    await core.createNamespacedConfigMap({
      namespace: "conflict",
      body: { metadata: { name: "first" }, data: { a: "b" } },
    });
    await mirror("conflict", folder);
    await inGit("conflict", `${folder}/conflict/configmaps/first.yaml`, () => true, "the first ConfigMap");

    let foreign = "";
    git.interceptNextPush(async () => {
      foreign = await git.pushForeignCommit("state", {
        branch: "conflict",
        files: { "docs/notes.md": "written by a person\n" },
        message: "A person's commit",
      });
    });
    await core.createNamespacedConfigMap({
      namespace: "conflict",
      body: { metadata: { name: "second" }, data: { c: "d" } },
    });
    await inGit("conflict", `${folder}/conflict/configmaps/second.yaml`, () => true, "the second ConfigMap");
    assert.ok(foreign, "the foreign commit went in between");
    assert.equal(await show("conflict", "docs/notes.md"), "written by a person\n");
    assert.ok(
      await isAncestor(foreign, "conflict"),
      "the person's commit is in the history: nothing was forced",
    );
  });

  it("a foreign commit touching the same file keeps the API's version of the object's document and the foreign changes elsewhere in the file", async () => {
    const path = "clusters/samefile/bundle.yaml";
    const bundle = `${configMap("ours", "samefile", { level: "info" })}---\n${configMap("theirs", "samefile", { owner: "team-a" })}`;
    await core.createNamespacedConfigMap({
      namespace: "samefile",
      body: { metadata: { name: "ours" }, data: { level: "info" } },
    });
    await git.pushForeignCommit("state", {
      branch: "samefile",
      startFrom: "main",
      files: { [path]: bundle },
    });
    await mirror("samefile", "clusters/samefile");
    await conditionOf(clients(kc).targets, "samefile", "samefile", "Ready", "True", undefined, 60_000);

    git.interceptNextPush(() =>
      git.pushForeignCommit("state", {
        branch: "samefile",
        files: { [path]: bundle.replace("owner: team-a", "owner: team-b") },
        message: "Hand the other document to team-b",
      }),
    );
    await core.patchNamespacedConfigMap(
      { namespace: "samefile", name: "ours", body: { data: { level: "debug" } } },
      mergePatch,
    );
    const merged = await inGit(
      "samefile",
      path,
      (c) => c.includes("level: debug"),
      "our edit replayed onto theirs",
    );
    assert.equal(
      merged,
      bundle.replace("owner: team-a", "owner: team-b").replace("level: info", "level: debug"),
    );
  });

  it("deleting the remote branch while writes are pending re-creates it, with the writes on top", async () => {
    const folder = "clusters/deleted";
    await core.createNamespacedConfigMap({
      namespace: "deleted",
      body: { metadata: { name: "first" }, data: { a: "b" } },
    });
    await mirror("deleted", folder);
    await inGit(
      "deleted",
      `${folder}/deleted/configmaps/first.yaml`,
      () => true,
      "the branch, first written",
    );
    git.interceptNextPush(() => git.gitIn("state", ["update-ref", "-d", "refs/heads/deleted"]));
    await core.createNamespacedConfigMap({
      namespace: "deleted",
      body: { metadata: { name: "pending" }, data: { a: "b" } },
    });
    await inGit("deleted", `${folder}/deleted/configmaps/pending.yaml`, () => true, "the re-created branch");
    const main = await git.branchHead("state", "main");
    assert.ok(await isAncestor(main!, "deleted"), "re-rooted on the default branch");
  });

  it("a GitBranch with parentBranch: release creates the branch from release on its first write, and not before", async () => {
    const release = await git.pushForeignCommit("state", {
      branch: "release",
      startFrom: "main",
      files: { "RELEASE.md": "the release line\n" },
    });
    await mirror("child", "clusters/child", ["services"], "release");
    await conditionOf(clients(kc).targets, "child", "child", "Ready", "True", undefined, 60_000);
    assert.equal(
      await git.branchHead("state", "child"),
      undefined,
      "an in-sync target with nothing to write creates nothing",
    );

    await core.createNamespacedService({
      namespace: "child",
      body: { metadata: { name: "api" }, spec: { ports: [{ port: 80 }], selector: { app: "api" } } },
    });
    await inGit("child", "clusters/child/child/services/api.yaml", () => true, "the first write");
    assert.ok(await isAncestor(release, "child"), "the branch starts from release");
    assert.equal(await show("child", "RELEASE.md"), "the release line\n");
  });

  it(`with the Git server stopped during ${outageObjects * 10} edits, every edit's final value is in Git after it restarts, and the status reported the outage`, async () => {
    const folder = "clusters/outage";
    const names = Array.from({ length: outageObjects }, (_, i) => `cm-${String(i).padStart(2, "0")}`);
    for (const name of names) {
      await core.createNamespacedConfigMap({
        namespace: "outage",
        body: { metadata: { name }, data: { round: "r0" } },
      });
    }
    await mirror("outage", folder);
    await inGit("outage", `${folder}/outage/configmaps/${names.at(-1)}.yaml`, () => true, "the snapshot");

    await git.stop();
    for (let round = 1; round <= 10; round++) {
      await Promise.all(
        names.map((name) =>
          core.patchNamespacedConfigMap(
            { namespace: "outage", name, body: { data: { round: `r${round}` } } },
            mergePatch,
          ),
        ),
      );
    }
    const reported = await conditionOf(
      clients(kc).targets,
      "outage",
      "outage",
      "Ready",
      "False",
      "RemoteUnreachable",
      60_000,
    );
    const message = condition(reported, "Ready")?.message ?? "";
    assert.match(message, /has failed since \d{4}-\d\d-\d\dT/);
    assert.match(message, /decided write\(s\) are kept and retried/);
    assert.equal(condition(reported, "Stalled")?.status, "False");

    await git.start();
    for (const name of names) {
      await inGit(
        "outage",
        `${folder}/outage/configmaps/${name}.yaml`,
        (c) => c.includes("round: r10"),
        `${name} at r10`,
        120_000,
      );
    }
    await conditionOf(clients(kc).targets, "outage", "outage", "Ready", "True", undefined, 60_000);
  });

  it("a folder broken by a foreign push is reported within one refresh, and cleared when fixed", async () => {
    const folder = "clusters/refresh";
    await core.createNamespacedConfigMap({
      namespace: "refresh",
      body: { metadata: { name: "first" }, data: { a: "b" } },
    });
    await mirror("refresh", folder);
    await inGit(
      "refresh",
      `${folder}/refresh/configmaps/first.yaml`,
      () => true,
      "the folder, first written",
    );
    const { targets } = clients(kc);
    await conditionOf(targets, "refresh", "refresh", "GitPathAccepted", "True", undefined, 60_000);

    await git.pushForeignCommit("state", {
      branch: "refresh",
      files: { [`${folder}/kustomization.yaml`]: "resources: []\nhelmCharts:\n  - name: podinfo\n" },
      message: "Try a Helm chart",
    });
    const refused = await conditionOf(
      targets,
      "refresh",
      "refresh",
      "GitPathAccepted",
      "False",
      "UnsupportedContent",
      30_000,
    );
    assert.match(condition(refused, "GitPathAccepted")?.message ?? "", /helmCharts/);

    await git.pushForeignCommit("state", {
      branch: "refresh",
      files: { [`${folder}/kustomization.yaml`]: null },
      message: "No Helm here after all",
    });
    await conditionOf(targets, "refresh", "refresh", "GitPathAccepted", "True", undefined, 30_000);
  });
});
