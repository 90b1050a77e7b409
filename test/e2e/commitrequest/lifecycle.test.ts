// A CommitRequest through what can go wrong around it: the remote away while it waits for its
// push, the worker stopped while holding it, and a GitTarget that never started a worker.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { gitBranches, gitTargets } from "../../../generated/v1alpha3/index.ts";
import type { GitServer } from "../../support/gitserver.ts";
import { mirrorFieldManager, mirrorGitTarget, type MirrorTarget } from "../../support/mirror.ts";
import type { MirrorEnvironment } from "../../support/mirrorenv.ts";
import {
  conditionOfRequest,
  createRequest,
  finishedRequest,
  readyOf,
  setValue as setValueOf,
  startSaving,
  requestReason,
} from "./fixture.ts";

const namespace = "held";
const target: MirrorTarget = {
  name: "held",
  path: "clusters/held",
  rules: [{ apiGroups: [""], resources: ["configmaps"] }],
  idleTimeout: "60s",
  maxDuration: "120s",
};

describe("CommitRequest: held by its worker until the push settles it", () => {
  let env: MirrorEnvironment;
  let git: GitServer;
  let kc: KubeConfig;
  let core: CoreV1Api;
  const file = (name: string) => `${target.path}/${namespace}/configmaps/${name}.yaml`;
  const setValue = (name: string, value: string) => setValueOf(core, namespace, name, value);

  before(async () => {
    // A short safety margin, so a withdrawal is seen within a test rather than after 120 s.
    env = await startSaving(namespace, target, ["outage", "stopped"], {
      commitRequestWithdrawMarginMs: 3_000,
    });
    ({ git, kc, core } = env);
  });
  after(() => env?.stop());

  it("an outage holds it WaitingForPush, then Committed", async () => {
    await git.stop();
    try {
      await setValue("outage", "v2");
      await createRequest(kc, namespace, "through-outage", {
        target: target.name,
        message: "Save through it",
      });
      // WaitingForPush says at first that the commit waits to reach the remote, and once a push
      // has failed, that it has not reached it.
      const waiting = await requestReason(
        kc,
        namespace,
        "through-outage",
        "WaitingForPush",
        60_000,
        /not reached the remote/,
      );
      assert.equal(readyOf(waiting)?.status, "Unknown");
      assert.equal(conditionOfRequest(waiting, "Reconciling")?.status, "True");
    } finally {
      await git.start();
    }
    // The worker retries on its own schedule (10 s first): no other commit is needed.
    const done = await finishedRequest(kc, namespace, "through-outage", 90_000);
    assert.equal(readyOf(done)?.reason, "Committed", JSON.stringify(done.status));
    assert.match((await git.fileAt("state", done.status!.commit!, file("outage")))!, /k: v2/);
  });

  it("withdrawal after the safety window", async () => {
    // A GitTarget whose GitBranch does not exist never gets a worker: nothing can commit it.
    const orphan = mirrorGitTarget(namespace, { ...target, name: "orphan", path: "clusters/orphan" });
    orphan.spec = { ...orphan.spec, gitBranchRef: { name: "nowhere" } };
    await gitTargets(kc).apply(orphan, mirrorFieldManager);
    await createRequest(kc, namespace, "orphaned", {
      target: "orphan",
      window: { attachTimeout: "1s", maxDuration: "1s" },
    });
    const waiting = await requestReason(kc, namespace, "orphaned", "WaitingForWorker");
    assert.match(readyOf(waiting)!.message, /no branch worker/);
    const done = await finishedRequest(kc, namespace, "orphaned");
    assert.equal(readyOf(done)?.reason, "FinalizeFailed", JSON.stringify(done.status));
    assert.equal(conditionOfRequest(done, "Stalled")?.status, "True");
    assert.match(readyOf(done)!.message, /held\/orphan never started a branch worker/);
    const age = Date.now() - new Date(done.metadata.creationTimestamp as unknown as string).getTime();
    assert.ok(age >= 5_000, `not before attachTimeout + maxDuration + the margin (${age} ms)`);
  });

  it("a worker stopped while holding it fails it", async () => {
    await git.stop();
    try {
      await setValue("stopped", "v2");
      await createRequest(kc, namespace, "abandoned", { target: target.name, message: "Never lands" });
      await requestReason(kc, namespace, "abandoned", "WaitingForPush");
      // Giving the branch up stops its worker, whose last publication cannot land either.
      await gitBranches(kc).delete(namespace, "main");
      const done = await finishedRequest(kc, namespace, "abandoned", 90_000);
      assert.equal(readyOf(done)?.reason, "FinalizeFailed", JSON.stringify(done.status));
      assert.match(readyOf(done)!.message, /worker stopped before the commit reached the remote/);
      assert.equal(conditionOfRequest(done, "Pushed")?.status, "False");
    } finally {
      await git.start();
    }
  });
});
