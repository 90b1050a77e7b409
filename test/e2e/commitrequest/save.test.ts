// CommitRequest against the real thing, in configured-author mode (attribution off): every
// window is the configured committer's, and a request names no actor, so it may save any of
// them. One row of commitrequest.md's outcome table per test, and the gates.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { commitRequests, gitTargets } from "../../../generated/v1alpha3/index.ts";
import type { GitServer } from "../../support/gitserver.ts";
import { mirrorFieldManager, mirrorGitTarget, type MirrorTarget } from "../../support/mirror.ts";
import type { MirrorEnvironment } from "../../support/mirrorenv.ts";
import { eventually } from "../../support/wait.ts";
import {
  conditionOfRequest,
  createRequest,
  finishedRequest,
  readyOf,
  setValue as setValueOf,
  startSaving,
} from "./fixture.ts";

const namespace = "saves";
const configMaps = [{ apiGroups: [""], resources: ["configmaps"] }];
// A window that would stay open for a minute: only a request closes it within a test.
const open: MirrorTarget = {
  name: "open",
  path: "clusters/open",
  rules: configMaps,
  idleTimeout: "60s",
  maxDuration: "120s",
};

describe("CommitRequest: save now, with a message, decided by the push", () => {
  let env: MirrorEnvironment;
  let git: GitServer;
  let kc: KubeConfig;
  let core: CoreV1Api;
  const file = (name: string) => `${open.path}/${namespace}/configmaps/${name}.yaml`;
  const tip = async () => (await git.branchHead("state", "main"))!;
  /** A commit's message as its object holds it: everything after the headers' blank line. */
  const messageOf = async (commit: string) => {
    const raw = await git.gitIn("state", ["cat-file", "commit", commit]);
    return raw.slice(raw.indexOf("\n\n") + 2);
  };
  const setValue = (name: string, value: string) => setValueOf(core, namespace, name, value);
  /** Has the worker fetch (a GitTarget requestedAt reads its folder again from the remote). */
  const fetchNow = async () => {
    const token = new Date().toISOString();
    const current = (await gitTargets(kc).get(namespace, open.name))!;
    await gitTargets(kc).jsonPatch(current, [
      { op: "add", path: "/metadata/annotations", value: { "reconcile.configbutler.ai/requestedAt": token } },
    ]);
    await eventually(
      async () => (await gitTargets(kc).get(namespace, open.name))?.status?.lastHandledReconcileAt === token,
      { description: "the worker to read the folder again" },
    );
  };

  before(async () => {
    env = await startSaving(namespace, open, ["saved", "same", "replayed", "template"], {
      commitRequestRetention: 3_000,
    });
    ({ git, kc, core } = env);
  });
  after(() => env?.stop());

  it("a request attaches to its author's open window and the commit carries its message", async () => {
    const before = await tip();
    await setValue("saved", "v2");
    const message = "Raise the limit\n\nAsked for by the on-call engineer.";
    await createRequest(kc, namespace, "save", { target: open.name, message });
    const done = await finishedRequest(kc, namespace, "save");
    assert.equal(readyOf(done)?.reason, "Committed", JSON.stringify(done.status));
    assert.equal(conditionOfRequest(done, "Pushed")?.status, "True");
    assert.equal(done.status?.branch, "main");
    const commit = done.status.commit!;
    assert.notEqual(commit, before);
    assert.equal((await messageOf(commit)).trimEnd(), message);
    assert.match((await git.fileAt("state", commit, file("saved")))!, /k: v2/);
    // Well inside the target's own 60 s of silence: the request closed the window.
    assert.equal(await tip(), commit);
  });

  it("no write before attachTimeout: NoWindow", async () => {
    const before = await tip();
    await createRequest(kc, namespace, "idle", { target: open.name, window: { attachTimeout: "1s" } });
    const done = await finishedRequest(kc, namespace, "idle");
    assert.equal(readyOf(done)?.reason, "NoWindow", JSON.stringify(done.status));
    assert.equal(readyOf(done)?.status, "True", "a benign outcome");
    assert.equal(conditionOfRequest(done, "Pushed")?.status, "False");
    assert.equal(done.status?.commit, undefined);
    assert.equal(await tip(), before, "nothing was committed");
  });

  it("CommitEmpty records an empty commit", async () => {
    const before = await tip();
    await createRequest(kc, namespace, "empty", {
      target: open.name,
      message: "Release 1.4 reviewed",
      whenNothingToCommit: "CommitEmpty",
      window: { attachTimeout: "1s" },
    });
    const done = await finishedRequest(kc, namespace, "empty");
    assert.equal(readyOf(done)?.reason, "NoWindow", JSON.stringify(done.status));
    assert.equal(conditionOfRequest(done, "Pushed")?.status, "True");
    const commit = done.status!.commit!;
    assert.equal(await git.gitIn("state", ["rev-parse", `${commit}^`]), before);
    assert.equal(
      await git.gitIn("state", ["diff", "--name-only", `${commit}^`, commit]),
      "",
      "it changes nothing",
    );
    assert.equal((await messageOf(commit)).trimEnd(), "Release 1.4 reviewed");
  });

  it("a window with no diff resolves AlreadyPresent only after the push", async () => {
    // Somebody wrote the edit to Git already, and the worker has fetched it: its plan finds
    // nothing to change, and the remote confirms it still holds that tip.
    const current = (await git.fileAt("state", "main", file("same")))!;
    const foreign = await git.pushForeignCommit("state", {
      files: { [file("same")]: current.replace("k: v1", "k: v2") },
      message: "The same edit, by hand",
    });
    await fetchNow();
    await setValue("same", "v2");
    await createRequest(kc, namespace, "present", { target: open.name, message: "Save the same edit" });
    const done = await finishedRequest(kc, namespace, "present");
    assert.equal(readyOf(done)?.reason, "AlreadyPresent", JSON.stringify(done.status));
    assert.equal(readyOf(done)?.status, "True");
    assert.equal(conditionOfRequest(done, "Pushed")?.status, "False");
    assert.equal(await tip(), foreign, "nothing was pushed");
  });

  it("a replay that turns a no-diff window into a commit resolves Committed", async () => {
    const current = (await git.fileAt("state", "main", file("replayed")))!;
    await git.pushForeignCommit("state", {
      files: { [file("replayed")]: current.replace("k: v1", "k: v2") },
      message: "Ahead of the cluster",
    });
    await fetchNow();
    // Somebody reverts it in Git, and the worker does not know: its plan of v2 finds no diff.
    await git.pushForeignCommit("state", {
      files: { [file("replayed")]: current },
      message: "Back to v1",
    });
    await setValue("replayed", "v2");
    await createRequest(kc, namespace, "replay", { target: open.name, message: "Keep v2" });
    const done = await finishedRequest(kc, namespace, "replay");
    assert.equal(readyOf(done)?.reason, "Committed", JSON.stringify(done.status));
    const commit = done.status!.commit!;
    assert.equal(commit, await tip());
    assert.equal((await messageOf(commit)).trimEnd(), "Keep v2");
    assert.match((await git.fileAt("state", commit, file("replayed")))!, /k: v2/);
  });

  it("the message is never executed as a template", async () => {
    const message = '  {{ .GitTarget.Name }} {{ printf "%s" "x" }} {{ template "no" }} {{/* kept */}}';
    await setValue("template", "v2");
    await createRequest(kc, namespace, "verbatim", { target: open.name, message });
    const done = await finishedRequest(kc, namespace, "verbatim");
    assert.equal(readyOf(done)?.reason, "Committed", JSON.stringify(done.status));
    assert.equal((await messageOf(done.status!.commit!)).trimEnd(), message);
  });

  it("a suspended target fails the request", async () => {
    const suspended = { ...mirrorGitTarget(namespace, open) };
    suspended.spec = { ...suspended.spec, suspend: true };
    await gitTargets(kc).apply(suspended, mirrorFieldManager);
    await eventually(
      async () =>
        (await gitTargets(kc).get(namespace, open.name))?.status?.conditions?.find((c) => c.type === "Ready")
          ?.reason === "Suspended",
      { description: "the GitTarget suspended" },
    );
    await createRequest(kc, namespace, "suspended", {
      target: open.name,
      whenNothingToCommit: "CommitEmpty",
      window: { attachTimeout: "1s" },
    });
    const done = await finishedRequest(kc, namespace, "suspended");
    assert.equal(readyOf(done)?.reason, "FinalizeFailed", JSON.stringify(done.status));
    assert.equal(conditionOfRequest(done, "Stalled")?.status, "True");
    assert.match(readyOf(done)!.message, /suspended/);
    await gitTargets(kc).apply(mirrorGitTarget(namespace, open), mirrorFieldManager);
  });

  it("a finished request is deleted after delete-after", async () => {
    await createRequest(kc, namespace, "retained", { target: open.name, window: { attachTimeout: "0s" } });
    const stamped = await eventually(
      async () => {
        const request = await commitRequests(kc).get(namespace, "retained");
        return request?.metadata.annotations?.["configbutler.ai/delete-after"] !== undefined && request;
      },
      { description: "the finished request stamped configbutler.ai/delete-after" },
    );
    const deleteAfter = Date.parse(stamped.metadata.annotations!["configbutler.ai/delete-after"]!);
    assert.ok(deleteAfter > Date.now() - 5_000, "stamped with a time ahead of when it finished");
    await eventually(async () => (await commitRequests(kc).get(namespace, "retained")) === undefined, {
      timeoutMs: 30_000,
      description: "the request deleted once past delete-after",
    });
    assert.ok(Date.now() >= deleteAfter, "not before its delete-after");
  });
});
