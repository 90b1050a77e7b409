import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { BranchWorker, defaultPushCooldownMs } from "../../../internal/git/worker/branchworker.ts";
import { Clone } from "../../../internal/git/engine/clone.ts";
import type { TargetSettings } from "../../../internal/git/folder/writes.ts";
import { GitServer } from "../../support/gitserver.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";
import { eventually } from "../../support/wait.ts";
import { configMaps } from "../../unit/git/fixtures.ts";
import { configMapIdentity } from "../../support/streams.ts";
import { committing, unheardFolders } from "../../support/worker.ts";
import { quiet } from "../../support/logger.ts";

const user = { username: "gitops", password: "s3cret" };
const committer = { name: "GitOps Reverser", email: "noreply@configbutler.ai" };
const cooldownMs = 20_000;

describe("the push cooldown of a branch worker", () => {
  let git: GitServer;
  let dir: string;
  let worker: BranchWorker;
  // "0s" closes a window after every change, so each upsert is a window of its own.
  const target: TargetSettings = {
    key: "apps/t",
    path: "clusters/dev",
    timers: { idleTimeoutMs: 0, maxDurationMs: 60_000 },
    prune: "OnEvent",
  };
  const upsert = (name: string, on = worker) =>
    on.enqueue(target, {
      type: "upsert",
      collection: configMaps,
      identity: configMapIdentity(name),
      object: { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "apps" } },
    });
  const show = (name: string, repository = "cluster-state") =>
    git.fileAt(repository, "main", `clusters/dev/apps/configmaps/${name}.yaml`);
  /** The pack exchanges of receive-pack the server answered: one per push. */
  const pushes = () =>
    git.requests.filter(
      (r) =>
        r.repository === "cluster-state" &&
        r.service === "receive-pack" &&
        !r.advertisement &&
        r.status === 200,
    ).length;

  /** A worker on a repository of its own, whose main holds one foreign commit. */
  async function startWorker(repository: string): Promise<BranchWorker> {
    const url = await git.createRepository(repository);
    await git.pushForeignCommit(repository, { files: { "README.md": "# State\n" }, message: "Start" });
    const started = new BranchWorker({
      clone: new Clone({ dir: join(dir, repository), url, branch: "main", auth: user }),
      committer,
      bufferLimitBytes: 8 * 1024 * 1024,
      // Longer than the 5 s default (pinned below), so the second and third windows are decided
      // inside the cooldown the first push starts even on a machine busy with other test files.
      pushCooldownMs: cooldownMs,
      materialize: committing(committer),
      folders: unheardFolders,
      logger: quiet,
    });
    started.start();
    workers.push(started);
    return started;
  }
  const workers: BranchWorker[] = [];

  before(async () => {
    git = await GitServer.start({ users: [user] });
    dir = makeOwnedTempDir("cooldown");
    worker = await startWorker("cluster-state");
  });
  after(async () => {
    for (const w of workers) await w.stop();
    await git?.close();
    if (dir) removeOwnedTempDir(dir);
  });

  it("the push cooldown is the seeds' 5 s", () => {
    assert.equal(defaultPushCooldownMs, 5_000);
  });

  it("a publication that pushed nothing starts no cooldown", async () => {
    // A worker of its own: the other test's pushes start cooldowns.
    const quietStart = await startWorker("quiet-start");
    const fetched = () =>
      git.requests.some(
        (r) => r.repository === "quiet-start" && r.service === "upload-pack" && !r.advertisement,
      );
    // A delete of a file Git never held changes nothing: its publication settles without a push.
    quietStart.enqueue(target, {
      type: "delete",
      collection: configMaps,
      identity: configMapIdentity("never-written"),
    });
    // Its cycle under way (the clone's fetch): the next write cannot join it.
    await eventually(fetched, { description: "the delete's publication fetching" });
    upsert("after-nothing", quietStart);
    await eventually(() => show("after-nothing", "quiet-start"), {
      timeoutMs: cooldownMs / 2,
      description: "the next write pushed without waiting out a cooldown",
    });
    const log = await git.gitIn("quiet-start", ["log", "--format=%s", "main"]);
    assert.deepEqual(
      log.trim().split("\n"),
      ["create apps/configmaps/after-nothing", "Start"],
      "one commit: the delete made none",
    );
  });

  it("the push cooldown batches two windows into one push", async () => {
    const initial = pushes();
    upsert("first");
    await eventually(() => show("first"), { description: "the first window's push" });
    // The ref can show the push before the server has logged the request that made it.
    await eventually(() => pushes() > initial, { description: "the first push logged" });
    const before = { pushes: pushes(), head: (await git.branchHead("cluster-state", "main"))! };

    // The second window closes inside the cooldown the first push started, and waits for it.
    upsert("second");
    await eventually(() => worker.backlog === 1, { description: "the second window decided and held" });
    upsert("third");
    await eventually(() => worker.backlog === 2, { description: "the third window decided and held" });
    await eventually(async () => (await show("second")) !== undefined && (await show("third")), {
      timeoutMs: cooldownMs + 30_000,
      description: "both windows on the remote",
    });

    // As for the first push, the request log may trail the ref it moved.
    await eventually(() => pushes() > before.pushes, { description: "the second push logged" });
    assert.equal(pushes() - before.pushes, 1, "one push carried both windows");
    const commits = await git.gitIn("cluster-state", ["rev-list", "--count", `${before.head}..main`]);
    assert.equal(Number(commits), 2, "one commit per window");
  });
});
