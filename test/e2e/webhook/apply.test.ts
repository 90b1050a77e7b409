// A WebhookClaim's tool applies when the branch worker decides (docs/webhook-applier.md), with a
// real webhook applier (test/support/webhookapplier.ts): it checks the operator's signature,
// fetches the requested commit as a Git user of its own and applies the folder with kubectl under
// its field manager, then reports by callback, by a status write, or not at all. The operator runs
// as it ships (its ServiceAccount under config/rbac's roles), with its receiver on a kernel-picked
// port, http to loopback allowed, and attribution on, so each live edit's commit is authored by
// who made it and an apply's echo that reached Git would name the applier's identity. Push
// notices are real GitReceiver deliveries to that receiver. The tests share one control plane,
// Git server, applier and (until a test restarts it) operator, and run in order.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { EventsV1Api, Watch, type V1ConfigMap } from "@kubernetes/client-node";
import {
  gitReceivers,
  webhookClaims,
  type ApplyOperation,
  type WebhookClaim,
} from "../../../generated/v1alpha3/index.ts";
import { sign } from "../../../internal/applier/webhook/index.ts";
import { grantEditing } from "../../support/attributionenv.ts";
import { testenvBinaries } from "../../support/binaries.ts";
import type { TestIdentity } from "../../support/controlplane.ts";
import { applyMirror, mirrorFieldManager } from "../../support/mirror.ts";
import { mirrorUser, startMirrorEnvironment, type MirrorEnvironment } from "../../support/mirrorenv.ts";
import { startOwnedOperator, type startOperator } from "../../support/operator.ts";
import { eventually } from "../../support/wait.ts";
import { post, WebhookApplier } from "../../support/webhookapplier.ts";
import { conditionOf } from "../controllers/helpers.ts";
import { genericPush } from "../receiver/payloads.ts";

const exec = promisify(execFile);

const namespace = "shop";
const claimName = "deployer";
const folder = "clusters/apps";
const file = `${folder}/settings.yaml`;
/** The claim Secret's token, which the operator and the applier sign with. */
const hookToken = "deployer-hmac-key";
/** The GitReceiver's token, which a push delivery is signed with. */
const pushToken = "push-hmac-key";
/** The applier's own Git user: it only reads. */
const deployerGit = { username: "deployer", password: "deployer-password", access: "read" as const };
const settingsFile = (mode: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: ${namespace}\n  labels:\n    app: apps\ndata:\n  mode: ${mode}\n`;

type Operator = ReturnType<typeof startOperator>;

describe("a WebhookClaim applies through a real webhook applier when the branch worker decides", () => {
  let env: MirrorEnvironment;
  let applier: WebhookApplier;
  let alice: TestIdentity;
  /** The operator running now: the environment's, until a test restarts it. */
  let operator: Operator;
  let restarts = 0;

  const claims = () => webhookClaims(env.kc);
  const operationOf = async (): Promise<ApplyOperation | undefined> =>
    (await claims().get(namespace, claimName))?.status?.operation;
  const modeOf = async () =>
    (await env.core.readNamespacedConfigMap({ namespace, name: "settings" }).catch(() => undefined))?.data
      ?.mode;
  const tip = () => env.git.branchHead("state", "main");
  /** The claim's operation once it succeeded at the branch's tip. */
  const appliedAtTip = async () => {
    const [operation, head] = await Promise.all([operationOf(), tip()]);
    return operation?.phase === "Succeeded" && operation.commit === head && operation;
  };
  /** The claim's operation for `commit`, once it is in `phase`. */
  const operationIn = (commit: string, phase: string, timeoutMs = 30_000) =>
    eventually(
      async () => {
        const operation = await operationOf();
        return operation?.commit === commit && operation.phase === phase && operation;
      },
      {
        timeoutMs,
        description: () =>
          `the operation of ${commit} ${phase}; applier errors: ${applier.errors.join("; ")}`,
      },
    );
  const receiverUrl = () => {
    const address = operator?.receiver?.address;
    return address && `http://${address.host}:${address.port}`;
  };
  const callbackUrl = () => `${receiverUrl()}/webhook-claim/${namespace}/${claimName}`;
  const eventsFor = async (reason: string) =>
    (await env.kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace })).items.filter(
      (e) => e.regarding?.kind === "WebhookClaim" && e.regarding.name === claimName && e.reason === reason,
    );
  const applyClaim = (completion: NonNullable<WebhookClaim["spec"]["completion"]>) =>
    claims().apply(
      {
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "WebhookClaim",
        metadata: { name: claimName, namespace },
        spec: {
          url: applier.url,
          secretRef: { name: "deployer-hook" },
          timeout: "5s",
          fieldManagers: [applier.fieldManager],
          completion,
        },
      },
      mirrorFieldManager,
    );
  /** A push delivery, as the Git host sends it, to the GitReceiver on the running operator's receiver. */
  const notice = async () => {
    const path = (await gitReceivers(env.kc).get(namespace, "push"))?.status?.webhookPath;
    const delivery = genericPush(pushToken, env.url, "main");
    const answer = await post(`${receiverUrl()}${path}`, delivery.body, delivery.headers["x-signature"]!);
    assert.equal(answer.status, 202, `the push delivery: ${answer.text}`);
  };
  /** Somebody pushes the folder's ConfigMap with `mode`, and the Git host delivers the push notice. */
  const pushMode = async (mode: string) => {
    const pushed = await env.git.pushForeignCommit("state", {
      files: { [file]: settingsFile(mode) },
      message: `The mode is ${mode}`,
    });
    await notice();
    return pushed;
  };
  /** kubectl as `who`, a person editing the cluster. */
  const kubectlAs = (who: TestIdentity, ...args: string[]) =>
    exec(testenvBinaries().kubectl, ["--kubeconfig", who.kubeconfigPath, ...args]);
  /** Stops the running operator and starts another with the environment's settings and `settings`. */
  const restartOperator = async (settings: Parameters<typeof startOperator>[1] = {}) => {
    await operator.stop();
    operator = startOwnedOperator(env.operatorKc, `webhook-restart-${++restarts}`, {
      ...env.operatorSettings,
      ...settings,
    });
    await eventually(receiverUrl, { description: "the new operator's receiver" });
  };

  before(async () => {
    env = await startMirrorEnvironment(
      [namespace],
      { receiverBindAddress: "127.0.0.1:0", webhookClaimAllowLoopbackHttp: true },
      { attributed: true },
    );
    operator = env.operator;
    env.git.addUser(deployerGit);
    alice = await env.plane.mintUser("alice");
    await grantEditing(env.kc, namespace, [
      { kind: "User", name: "alice", apiGroup: "rbac.authorization.k8s.io" },
    ]);
    applier = await WebhookApplier.start({
      token: hookToken,
      plane: env.plane,
      kubeConfig: env.kc,
      gitUser: deployerGit,
      folder,
      receiverUrl,
    });
    const seeded = await env.git.pushForeignCommit("state", {
      files: { [file]: settingsFile("start") },
      message: "The folder the deployer applies",
    });
    // The deployer applied its folder on its own once, before any claim held it.
    const first = await applier.applyCommit(env.url, "main", seeded);
    assert.ok(first.ok, first.message);
    for (const [name, token] of [
      ["deployer-hook", hookToken],
      ["push-hook", pushToken],
    ] as const)
      await env.core.createNamespacedSecret({
        namespace,
        body: { metadata: { name }, stringData: { token } },
      });
    await gitReceivers(env.kc).apply(
      {
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "GitReceiver",
        metadata: { name: "push", namespace },
        spec: { type: "generic-hmac", secretRef: { name: "push-hook" } },
      },
      mirrorFieldManager,
    );
    await applyMirror(env.kc, namespace, env.url, mirrorUser, [
      {
        name: "apps",
        path: folder,
        rules: [
          { apiGroups: [""], resources: ["configmaps"], objectSelector: { matchLabels: { app: "apps" } } },
        ],
        applierClaimRef: { kind: "WebhookClaim", name: claimName },
      },
    ]);
    await applyClaim({ mode: "Callback" });
    await conditionOf(gitReceivers(env.kc), namespace, "push", "Ready", "True", undefined, 60_000);
    // The converge at start: the claim's tool is asked for the tip once the snapshot is in Git.
    await eventually(appliedAtTip, {
      timeoutMs: 90_000,
      description: () => `the converge at start; applier errors: ${applier.errors.join("; ")}`,
    });
  });
  after(async () => {
    await applier?.close();
    if (operator && operator !== env?.operator) await operator.stop();
    await env?.stop();
  });

  it("a pushed commit is applied through a WebhookClaim within seconds of its push notice, and two live edits seconds apart never ping-pong", async () => {
    const pushed = await env.git.pushForeignCommit("state", {
      files: { [file]: settingsFile("slow") },
      message: "A person changes the mode",
    });
    const noticedAt = Date.now();
    await notice();
    await eventually(async () => (await modeOf()) === "slow", {
      timeoutMs: 30_000,
      description: "the pushed mode applied",
    });
    const seconds = (Date.now() - noticedAt) / 1000;
    assert.ok(seconds < 20, `applied ${seconds} s after the notice`);
    const operation = await operationIn(pushed, "Succeeded");
    assert.equal(operation.reason, "ForeignCommit");
    // What the tool was sent: signed (it answered 202 only to a signature that holds), naming the commit.
    const [request, ...more] = applier.requestsFor(pushed);
    assert.equal(more.length, 0, "one request for the commit");
    assert.equal(request!.answered, 202);
    assert.equal(request!.headers["content-type"], "application/json");
    assert.deepEqual(JSON.parse(request!.body), {
      repository: env.url,
      branch: "main",
      commit: pushed,
      reason: "ForeignCommit",
      claim: `${namespace}/${claimName}`,
      token: operation.requestToken,
    });
    // The tool records its report once the answer reaches it, which may be after the status write.
    const report = await eventually(() => applier.reports.find((r) => r.token === operation.requestToken), {
      description: "the applier's report answered",
    });
    assert.equal(report?.status, 200, report?.answer);
    assert.ok((await eventsFor("ApplyRequested")).length > 0, "an ApplyRequested Event");

    // Two live edits seconds apart, by a person with kubectl; every mode the cluster shows is kept.
    const before = (await tip())!;
    const shown: string[] = [];
    const watching = await new Watch(env.kc).watch(
      `/api/v1/namespaces/${namespace}/configmaps`,
      { fieldSelector: "metadata.name=settings" },
      (_phase: string, cm: V1ConfigMap) => void shown.push(cm.data?.mode ?? ""),
      () => undefined,
    );
    try {
      const edit = (mode: string) =>
        kubectlAs(
          alice,
          "patch",
          "configmap",
          "settings",
          "-n",
          namespace,
          "--type=merge",
          "-p",
          JSON.stringify({ data: { mode } }),
        );
      const inGit = (mode: string) =>
        eventually(async () => (await env.git.fileAt("state", "main", file))?.includes(`mode: ${mode}\n`), {
          timeoutMs: 30_000,
          description: `Git holds mode ${mode}`,
        });
      await edit("first");
      await inGit("first");
      await edit("second");
      await inGit("second");
      // A commit elsewhere has the tool apply the branch's tip: both edits must survive it.
      await env.git.pushForeignCommit("state", {
        files: { "docs/notes.md": "Somebody writes elsewhere.\n" },
        message: "Elsewhere",
      });
      await notice();
      const applied = await eventually(
        async () => {
          const operation = await appliedAtTip();
          return (
            operation &&
            operation.reason === "ForeignCommit" &&
            applier.applied.at(-1) === operation.commit &&
            operation
          );
        },
        { timeoutMs: 30_000, description: "the tip, with both edits, applied" },
      );
      // Asked for after the edits were published: the commit holds the second, and the one elsewhere.
      assert.match((await env.git.fileAt("state", applied.commit!, file)) ?? "", /mode: second\n/);
      assert.equal(
        await env.git.fileAt("state", applied.commit!, "docs/notes.md"),
        "Somebody writes elsewhere.\n",
      );
      assert.equal(await modeOf(), "second");
      assert.match((await env.git.fileAt("state", "main", file)) ?? "", /mode: second\n/);
    } finally {
      watching.abort();
    }
    // Git never went back: each commit since that touched the file holds a newer edit, by alice.
    const log = (
      await env.git.gitIn("state", ["log", "--reverse", "--format=%H|%an", `${before}..main`, "--", file])
    )
      .split("\n")
      .filter((l) => l !== "");
    const versions = await Promise.all(
      log.map(async (line) => {
        const [commit, author] = line.split("|") as [string, string];
        return { author, mode: /mode: (\S+)/.exec((await env.git.fileAt("state", commit, file)) ?? "")?.[1] };
      }),
    );
    assert.deepEqual(
      versions,
      [
        { author: "alice", mode: "first" },
        { author: "alice", mode: "second" },
      ],
      "one commit per edit, by alice, and none reverting one",
    );
    // Nor did the cluster: once an edit shows, no older value shows again.
    const changes = shown.filter((mode, i) => i === 0 || shown[i - 1] !== mode);
    assert.deepEqual(
      changes.slice(changes.indexOf("first")),
      ["first", "second"],
      `the cluster showed ${changes.join(" → ")}`,
    );
  });

  it("a callback with a bad signature or a replayed token is refused", async () => {
    const ended = await eventually(appliedAtTip, { description: "the last apply ended" });
    const captured = await eventually(
      () => applier.reports.find((r) => r.mode === "callback" && r.token === ended.requestToken),
      { description: "the applier's callback for the last apply, answered" },
    );
    assert.ok(captured, "the applier's callback for the last apply");
    // An operation in flight: the tool applies and holds its report.
    applier.holdReports();
    const pushed = await pushMode("held");
    const running = await operationIn(pushed, "Running");
    await eventually(() => applier.applied.includes(pushed), { description: "the held apply ran" });
    const report = (
      token: string,
      key: string,
      signed = JSON.stringify({ token, result: "Failed", message: "forged" }),
    ) => post(callbackUrl(), signed, sign(signed, key));

    const forged = await report(running.requestToken!, "not-the-key");
    assert.equal(forged.status, 401, forged.text);
    const body = JSON.stringify({ token: running.requestToken, result: "Failed" });
    const tampered = await post(callbackUrl(), body.replace("Failed", "Succeeded"), sign(body, hookToken));
    assert.equal(tampered.status, 401, tampered.text);
    // A captured report of the earlier apply cannot end this one.
    const replayed = await post(callbackUrl(), captured.body, captured.signature);
    assert.equal(replayed.status, 409, replayed.text);
    assert.deepEqual(await operationOf(), running, "the running operation is untouched");

    applier.releaseReports();
    const done = await operationIn(pushed, "Succeeded");
    assert.equal(done.requestToken, running.requestToken);
    const own = await eventually(() => applier.reports.find((r) => r.token === running.requestToken), {
      description: "the applier's report answered",
    });
    assert.equal(own.status, 200, own.answer);
    // The tool's own report, replayed once its operation ended.
    const again = await post(callbackUrl(), own.body, own.signature);
    assert.equal(again.status, 409, again.text);
    assert.match((JSON.parse(again.text) as { message: string }).message, /already ended Succeeded/);
    const failed = await report(running.requestToken!, hookToken);
    assert.equal(failed.status, 409, "a validly signed report for an ended operation");
    assert.deepEqual(await operationOf(), done, "the ended operation is untouched");
    assert.equal(await modeOf(), "held");
  });

  it("completion Status: the applier writes the end onto status.operation through the API, and the operation ends Succeeded", async () => {
    await applyClaim({ mode: "Status" });
    applier.mode = "status";
    try {
      const pushed = await pushMode("by-status");
      const operation = await operationIn(pushed, "Succeeded");
      assert.equal(await modeOf(), "by-status");
      assert.equal(
        operation.message,
        `Applied ${pushed.slice(0, 12)} as ${applier.fieldManager}.`,
        "the tool's message",
      );
      // The tool records its report once the answer reaches it, which may be after the status write.
      const report = await eventually(() => applier.reports.find((r) => r.token === operation.requestToken), {
        description: "the applier's report answered",
      });
      assert.equal(report?.mode, "status");
      assert.equal(report?.status, 200, report?.answer);
      const claim = await claims().get(namespace, claimName);
      assert.ok(
        claim?.metadata.managedFields?.some(
          (f) => f.manager === applier.fieldManager && f.subresource === "status",
        ),
        "the status write is the tool's own",
      );
    } finally {
      applier.mode = "callback";
      await applyClaim({ mode: "Callback" });
    }
  });

  it("completion Settle: an applier that reports nothing is taken as done settleAfter past its answer, and the operation ends Succeeded", async () => {
    await applyClaim({ mode: "Settle", settleAfter: "2s" });
    applier.mode = "silent";
    try {
      const pushed = await pushMode("settled");
      const operation = await operationIn(pushed, "Succeeded");
      assert.match(operation.message ?? "", /completion Settle/);
      const took = Date.parse(operation.completedAt!) - Date.parse(operation.requestedAt!);
      // Times in status are to the second.
      assert.ok(took >= 1_000, `ended ${took} ms after the request`);
      assert.equal(await modeOf(), "settled");
      assert.equal(
        applier.reports.filter((r) => r.token === operation.requestToken).length,
        0,
        "no report sent",
      );
    } finally {
      applier.mode = "callback";
      await applyClaim({ mode: "Callback" });
    }
  });

  it("a tool that applies and reports inside its request ends the operation as it reported, not Unresolved", async () => {
    applier.synchronous = true;
    try {
      const pushed = await pushMode("inside-the-request");
      const operation = await operationIn(pushed, "Succeeded");
      // The tool records its report once the answer reaches it, which may be after the status write.
      const report = await eventually(() => applier.reports.find((r) => r.token === operation.requestToken), {
        description: "the applier's report answered",
      });
      assert.equal(report?.status, 200, report?.answer);
      assert.equal(await modeOf(), "inside-the-request");
    } finally {
      applier.synchronous = false;
    }
  });

  it("a restart recovers an operation the webhook applier had not reported", async () => {
    applier.holdReports();
    const pushed = await pushMode("across-restart");
    const running = await operationIn(pushed, "Running");
    await eventually(() => applier.applied.includes(pushed), { description: "the held apply ran" });
    await operator.stop();
    const left = await operationOf();
    assert.deepEqual(left, running, "the stopped process left the operation Running");
    const requestsBefore = applier.requestsFor(pushed).length;
    assert.equal(requestsBefore, 1);
    await restartOperator();
    const restarted = operator;
    await eventually(
      () =>
        restarted.logs.some(
          (l) =>
            l.startsWith("following an apply the last process left in flight") &&
            l.includes(running.requestToken!),
        ),
      { description: "the new process follows the recorded operation" },
    );
    assert.equal(applier.requestsFor(pushed).length, 1, "no second request for the commit before the report");
    // The tool reports now, to the new process's receiver.
    applier.releaseReports();
    const done = await operationIn(pushed, "Succeeded");
    assert.equal(done.requestToken, running.requestToken, "the same operation ended");
    const report = await eventually(() => applier.reports.find((r) => r.token === running.requestToken), {
      description: "the applier's report answered",
    });
    assert.equal(report.status, 200, report.answer);
    await eventually(
      () =>
        restarted.logs.some((l) => l.startsWith("an apply attempt ended") && l.includes('"recovered":true')),
      { description: "the recovered follow's end reported" },
    );
    assert.equal(applier.requestsFor(pushed).length, 1, "the commit was asked for once");
    assert.equal(await modeOf(), "across-restart");
  });

  it("an applier that never reports ends Unresolved after the budget", async () => {
    await restartOperator({ applyBudgetMs: 3_000 });
    applier.applies = false;
    try {
      const pushed = await pushMode("unheard");
      const unresolved = await operationIn(pushed, "Failed");
      assert.match(unresolved.message ?? "", /^Unresolved:/);
      const took = Date.parse(unresolved.completedAt!) - Date.parse(unresolved.requestedAt!);
      assert.ok(took >= 2_000, `ended ${took} ms after the request`);
      await eventually(async () => (await eventsFor("ApplyUnresolved")).length > 0, {
        description: "an ApplyUnresolved Event",
      });
      // The worker asks again, after its backoff; this time the tool applies and reports.
      applier.applies = true;
      const succeeded = await operationIn(pushed, "Succeeded");
      // (On a machine slow enough that the tool's fetch and apply pass 3 s, more than one.)
      const [first, ...later] = applier.requestsFor(pushed).map((r) => r.apply?.token);
      assert.equal(first, unresolved.requestToken);
      assert.notEqual(succeeded.requestToken, unresolved.requestToken, "a new operation");
      assert.ok(later.includes(succeeded.requestToken), "the one that succeeded was a later request");
      assert.equal(await modeOf(), "unheard");
    } finally {
      applier.applies = true;
    }
  });
});
