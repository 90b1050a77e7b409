import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { applyMirror } from "../../support/mirror.ts";
import {
  mirrorUser as user,
  startMirrorEnvironment,
  type MirrorEnvironment,
} from "../../support/mirrorenv.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";
import { eventually } from "../../support/wait.ts";
import { clients, conditionOf } from "../controllers/helpers.ts";

const namespace = "local";
const folder = "clusters/local";
const path = `${folder}/${namespace}/configmaps/settings.yaml`;

describe("a fault of the local clone is reported as local, and the clone is reset", () => {
  let env: MirrorEnvironment;
  let workerRoot: string;

  const inGit = (test: (content: string) => boolean, description: string) =>
    eventually(
      async () => {
        const content = await env.git.fileAt("state", "main", path);
        return content !== undefined && test(content) && content;
      },
      { timeoutMs: 60_000, description },
    );

  before(async () => {
    workerRoot = makeOwnedTempDir("localfault-workers");
    env = await startMirrorEnvironment([namespace], { workerRoot });
  });
  after(async () => {
    await env?.stop();
    if (workerRoot) removeOwnedTempDir(workerRoot);
  });

  it("a local writer fault is not RemoteUnreachable", async () => {
    const { kc, core, url } = env;
    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "settings" }, data: { level: "info" } },
    });
    await applyMirror(kc, namespace, url, user, [
      { name: namespace, path: folder, rules: [{ apiGroups: [""], resources: ["configmaps"] }] },
    ]);
    await inGit((c) => c.includes("level: info"), "the snapshot in Git");
    await conditionOf(clients(kc).targets, namespace, namespace, "Ready", "True", undefined, 60_000);

    // Corrupt the clone behind the worker's back: its objects are gone, so the next commit cannot
    // read the tree it builds on. The Git server is untouched and answers all along.
    const branch = await clients(kc).branches.get(namespace, "main");
    rmSync(join(workerRoot, branch!.metadata.uid!, ".git", "objects"), { recursive: true, force: true });
    await core.patchNamespacedConfigMap({
      namespace,
      name: "settings",
      body: [{ op: "replace", path: "/data/level", value: "debug" }],
    });

    const failing = await conditionOf(
      clients(kc).targets,
      namespace,
      namespace,
      "Ready",
      "False",
      "LocalWriteFailed",
      60_000,
    );
    const ready = failing.status!.conditions!.find((c) => c.type === "Ready")!;
    assert.match(ready.message, /local fault/);
    assert.match(ready.message, /not of the Git remote/);
    assert.match(ready.message, /clone is reset and cloned afresh/);
    assert.match(ready.message, /1 decided write\(s\) are kept and replayed/);
    const reconciling = failing.status!.conditions!.find((c) => c.type === "Reconciling")!;
    assert.equal(reconciling.status, "True", "the worker retries on its own");

    await inGit((c) => c.includes("level: debug"), "the edit in Git, after the clone was reset");
    await conditionOf(clients(kc).targets, namespace, namespace, "Ready", "True", undefined, 60_000);
    assert.ok(
      env.operator.errors.some((e) =>
        e.startsWith("the local clone failed; it is removed and cloned afresh"),
      ),
      "the log says what the worker did about it",
    );
  });
});
