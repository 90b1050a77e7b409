// Flux applies when the branch worker decides (applier-claims.md, "Flush, then apply"), against
// the real source-controller and kustomize-controller: a held Kustomization is resumed for one
// apply at a time, for the tip the worker published, and suspended again. A push notice is the
// one the push receiver gives (WorkerManager.notice), so these tests need no Git host webhook.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { EventsV1Api } from "@kubernetes/client-node";
import {
  fluxClaims,
  gitTargets,
  watchRules,
  type ApplyOperation,
} from "../../../generated/v1alpha3/index.ts";
import { kustomizationType, type Kustomization } from "../../../internal/applier/flux/view.ts";
import { ResourceClient } from "../../../internal/kube/resourceclient.ts";
import {
  fluxClaim,
  fluxSource,
  kustomization,
  requestReconcile,
  startFlux,
  type Flux,
} from "../../support/flux.ts";
import { applyMirror, mirrorFieldManager, mirrorGitTarget } from "../../support/mirror.ts";
import { mirrorUser, startMirrorEnvironment, type MirrorEnvironment } from "../../support/mirrorenv.ts";
import { eventually } from "../../support/wait.ts";
import { startOperatorProcess, startOwnedOperator } from "../../support/operator.ts";
import { kustomizeBinary } from "../../support/binaries.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";
import { ageIdentity } from "../../support/sops.ts";

const namespace = "shop";
const branchKey = `${namespace}/main`;
const rules = (app: string) => [
  { apiGroups: [""], resources: ["configmaps"], objectSelector: { matchLabels: { app } } },
];
const settingsFile = (app: string, mode: string, name = `${app}-settings`) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: ${namespace}\n  labels:\n    app: ${app}\ndata:\n  mode: ${mode}\n`;

/** A Deployment that never gets ready: no kubelet runs here. */
const neverReady = (name: string) =>
  `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: ${name}\n  namespace: ${namespace}\nspec:\n  selector:\n    matchLabels: {app: ${name}}\n  template:\n    metadata:\n      labels: {app: ${name}}\n    spec:\n      containers:\n        - name: c\n          image: example.invalid/never:1\n`;

describe("Flux applies when the branch worker decides, with the real Flux controllers", () => {
  let env: MirrorEnvironment;
  let flux: Flux;
  let kustomizations: ResourceClient<Kustomization>;

  const operationOf = async (name: string): Promise<ApplyOperation | undefined> =>
    (await fluxClaims(env.kc).get(namespace, name))?.status?.operation;
  const modeOf = async (name: string) =>
    (await env.core.readNamespacedConfigMap({ namespace, name }).catch(() => undefined))?.data?.mode;
  const tip = () => env.git.branchHead("state", "main");
  /** The claim's operation once it succeeded at the branch's tip, held suspended again. */
  const appliedAtTip = async (name: string) => {
    const [operation, head, k] = await Promise.all([
      operationOf(name),
      tip(),
      kustomizations.get(namespace, name),
    ]);
    return (
      operation?.phase === "Succeeded" && operation.commit === head && k?.spec?.suspend === true && operation
    );
  };
  const eventsFor = async (name: string, reason: string) =>
    (await env.kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace })).items.filter(
      (e) => e.regarding?.kind === "FluxClaim" && e.regarding.name === name && e.reason === reason,
    );
  /** A manifest the API server refuses, pushed and noticed: its apply ends Failed. */
  const pushBrokenAndFail = async () => {
    await env.git.pushForeignCommit("state", {
      files: {
        "clusters/apps/broken.yaml":
          "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Not_A_Name\n  namespace: shop\n",
      },
      message: "A broken manifest",
    });
    env.operator.workers.notice(branchKey);
    await eventually(async () => (await operationOf("apps"))?.phase === "Failed", {
      timeoutMs: 60_000,
      description: "the apply failed",
    });
  };
  const appsTarget = (idleTimeout?: string) =>
    mirrorGitTarget(namespace, {
      name: "apps",
      path: "clusters/apps",
      rules: rules("apps"),
      ...(idleTimeout ? { idleTimeout, maxDuration: "60s" } : {}),
      applierClaimRef: { kind: "FluxClaim", name: "apps" },
    });
  /** A new operator process on the environment's cluster, with a clone directory of its own, removed when it stops. */
  const startAnotherOperator = (name: string) =>
    startOwnedOperator(env.operatorKc, name, env.operatorSettings);
  const applyClaim = (name: string) =>
    fluxClaims(env.kc).apply(fluxClaim(namespace, name), mirrorFieldManager);

  before(async () => {
    env = await startMirrorEnvironment([namespace], {}, { attributed: true });
    flux = await startFlux(env.plane);
    kustomizations = new ResourceClient<Kustomization>(env.kc, kustomizationType);
    await env.git.pushForeignCommit("state", {
      files: Object.fromEntries(
        ["apps", "infra"].map((app) => [`clusters/${app}/settings.yaml`, settingsFile(app, "fast")]),
      ),
      message: "The folders Flux applies",
    });
    await fluxSource(env, namespace, mirrorUser);
    for (const name of ["apps", "infra"])
      await kustomizations.apply(kustomization(namespace, name, `./clusters/${name}`), "kubectl");
    // Flux applies both folders once on its own, before any claim holds them.
    await eventually(
      async () => (await modeOf("apps-settings")) === "fast" && (await modeOf("infra-settings")) === "fast",
      {
        timeoutMs: 60_000,
        description: "Flux applied both folders",
      },
    );
    await applyMirror(
      env.kc,
      namespace,
      env.url,
      mirrorUser,
      ["apps", "infra"].map((app) => ({
        name: app,
        path: `clusters/${app}`,
        rules: rules(app),
        applierClaimRef: { kind: "FluxClaim" as const, name: app },
      })),
    );
    for (const name of ["apps", "infra"]) await applyClaim(name);
    // The converge at start: each claim's applier applies the tip once its snapshots are in Git.
    for (const name of ["apps", "infra"])
      await eventually(() => appliedAtTip(name), {
        timeoutMs: 90_000,
        description: `${name} converged at the tip`,
      });
  });
  after(async () => {
    await flux?.stop();
    await env?.stop();
  });

  it("a commit pushed to Git is applied through the claim within seconds of its push notice", async () => {
    const pushed = await env.git.pushForeignCommit("state", {
      files: { "clusters/apps/settings.yaml": settingsFile("apps", "slow") },
      message: "A person changes the mode",
    });
    const noticedAt = Date.now();
    env.operator.workers.notice(branchKey);
    await eventually(async () => (await modeOf("apps-settings")) === "slow", {
      timeoutMs: 30_000,
      description: "the pushed mode applied",
    });
    const seconds = (Date.now() - noticedAt) / 1000;
    assert.ok(seconds < 20, `applied ${seconds} s after the notice`);
    const operation = await eventually(() => appliedAtTip("apps"), {
      timeoutMs: 30_000,
      description: "apps at the tip",
    });
    assert.equal(operation.commit, pushed);
    assert.equal(operation.reason, "ForeignCommit");
    assert.ok((await eventsFor("apps", "ApplyRequested")).length > 0);
    // Every applier on the branch applies a foreign commit, whichever folder it touched.
    await eventually(() => appliedAtTip("infra"), { timeoutMs: 30_000, description: "infra at the tip too" });
  });

  it("a foreign commit is applied after the pending writes are replayed onto it", async () => {
    // A long window keeps the live edit pending while somebody pushes.
    const applied = await gitTargets(env.kc).apply(appsTarget("30s"), mirrorFieldManager);
    await eventually(
      async () =>
        (await gitTargets(env.kc).get(namespace, "apps"))?.status?.observedGeneration ===
        applied.metadata.generation,
      { timeoutMs: 30_000, description: "the long window observed" },
    );
    await env.core.patchNamespacedConfigMap({
      namespace,
      name: "apps-settings",
      body: [{ op: "replace", path: "/data/mode", value: "pending" }],
    });
    const foreign = await env.git.pushForeignCommit("state", {
      files: { "clusters/infra/settings.yaml": settingsFile("infra", "foreign") },
      message: "Somebody pushes while an edit is pending",
    });
    env.operator.workers.notice(branchKey);
    const operation = await eventually(() => appliedAtTip("apps"), {
      timeoutMs: 60_000,
      description: "apps applied",
    });
    assert.equal(operation.reason, "ForeignCommit");
    const [, parent] = (await env.git.gitIn("state", ["log", "--format=%H", "-2", operation.commit!]))
      .trim()
      .split("\n");
    assert.equal(parent, foreign, "the applied commit is the pending edit replayed onto the foreign one");
    assert.equal(await modeOf("apps-settings"), "pending");
    await eventually(async () => (await modeOf("infra-settings")) === "foreign", {
      timeoutMs: 30_000,
      description: "infra applied the foreign commit",
    });
    // Back to the default window for the tests after this one.
    await gitTargets(env.kc).apply(appsTarget(), mirrorFieldManager);
  });

  it("two live edits seconds apart never ping-pong: Git and the cluster both end at the second", async () => {
    const before = await tip();
    await env.core.patchNamespacedConfigMap({
      namespace,
      name: "apps-settings",
      body: [{ op: "replace", path: "/data/mode", value: "first" }],
    });
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    await env.core.patchNamespacedConfigMap({
      namespace,
      name: "apps-settings",
      body: [{ op: "replace", path: "/data/mode", value: "second" }],
    });
    await eventually(
      async () =>
        (await env.git.fileAt("state", "main", "clusters/apps/settings.yaml"))?.includes("mode: second"),
      // Seconds, usually; twice, on a machine busy with other test files, it took longer than
      // 30 s (not investigated yet). What the test pins is the final state, not a latency.
      { timeoutMs: 90_000, description: "Git holds the second edit" },
    );
    // A foreign commit elsewhere makes every applier apply the tip: the edits must survive it.
    await env.git.pushForeignCommit("state", {
      files: { "clusters/infra/settings.yaml": settingsFile("infra", "busy") },
      message: "Elsewhere",
    });
    env.operator.workers.notice(branchKey);
    await eventually(async () => (await modeOf("infra-settings")) === "busy", {
      timeoutMs: 30_000,
      description: "the foreign commit applied",
    });
    await eventually(() => appliedAtTip("apps"), { timeoutMs: 30_000, description: "apps applied the tip" });
    assert.equal(await modeOf("apps-settings"), "second");
    assert.match(
      (await env.git.fileAt("state", "main", "clusters/apps/settings.yaml")) ?? "",
      /mode: second/,
    );
    const authors = await env.git.gitIn("state", ["log", "--format=%an", `${before}..main`]);
    assert.doesNotMatch(authors, /kustomize-controller/, "no commit carries an apply's echo");
  });

  it("an API-created object is adopted, so a Git-side delete prunes it", async () => {
    await env.core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "apps-extra", labels: { app: "apps" } }, data: { mode: "new" } },
    });
    await eventually(
      async () =>
        (await env.git.fileAt("state", "main", "clusters/apps/apps-extra.yaml")) ??
        (await env.git.listFiles("state", "main", "clusters/apps")).find((f) => f.includes("apps-extra")),
      { timeoutMs: 30_000, description: "the new ConfigMap in Git" },
    );
    // The adopt stamps Flux's owner labels on it: only then does Flux prune it.
    await eventually(
      async () =>
        (await env.core.readNamespacedConfigMap({ namespace, name: "apps-extra" })).metadata?.labels?.[
          "kustomize.toolkit.fluxcd.io/name"
        ] === "apps",
      { timeoutMs: 30_000, description: "apps-extra adopted by Kustomization apps" },
    );
    const file = (await env.git.listFiles("state", "main", "clusters/apps")).find((f) =>
      f.includes("apps-extra"),
    )!;
    await env.git.pushForeignCommit("state", {
      files: { [file.startsWith("clusters/") ? file : `clusters/apps/${file}`]: null },
      message: "Drop the extra",
    });
    env.operator.workers.notice(branchKey);
    await eventually(
      async () =>
        !(await env.core.readNamespacedConfigMap({ namespace, name: "apps-extra" }).catch(() => undefined)),
      { timeoutMs: 30_000, description: "apps-extra pruned by Flux" },
    );
  });

  it("a failed apply is reported on the claim and retried by the worker's backoff, not by the dispatcher", async () => {
    await pushBrokenAndFail();
    await eventually(async () => (await eventsFor("apps", "ApplyFailed")).length > 0, {
      timeoutMs: 30_000,
      description: "an ApplyFailed Event",
    });
    const k = await eventually(
      async () => {
        const found = await kustomizations.get(namespace, "apps");
        return found?.spec?.suspend === true && found;
      },
      { timeoutMs: 30_000, description: "suspended again after the failure" },
    );
    assert.equal(k.spec?.suspend, true);
    const fixed = await env.git.pushForeignCommit("state", {
      files: { "clusters/apps/broken.yaml": null },
      message: "Fix it",
    });
    env.operator.workers.notice(branchKey);
    const operation = await eventually(() => appliedAtTip("apps"), {
      timeoutMs: 60_000,
      description: "applied after the fix",
    });
    assert.equal(operation.commit, fixed);
  });

  it("a Flux attempt whose GitRepository fetched another commit than the one asked for ends RequestFailed, with an ApplyRequestFailed Event, and the worker asks again after its backoff", async () => {
    await eventually(() => appliedAtTip("apps"), { timeoutMs: 60_000, description: "apps at the tip" });
    const before = await operationOf("apps");
    // Flux's credential stops working: source-controller handles the dispatcher's fetch request
    // and keeps the commit it had.
    const credential = (password: string) =>
      env.core.patchNamespacedSecret({
        namespace,
        name: "flux-git",
        body: [{ op: "replace", path: "/data/password", value: Buffer.from(password).toString("base64") }],
      });
    await credential("not-the-password");
    let pushed = "";
    try {
      pushed = await env.git.pushForeignCommit("state", {
        files: { "clusters/apps/settings.yaml": settingsFile("apps", "unfetched") },
        message: "Pushed while Flux cannot fetch",
      });
      const [failed] = await eventually(
        async () => {
          env.operator.workers.notice(branchKey);
          const found = (await eventsFor("apps", "ApplyRequestFailed")).filter((e) =>
            e.note?.includes(pushed),
          );
          return found.length > 0 && found;
        },
        { timeoutMs: 60_000, description: "an ApplyRequestFailed Event naming the pushed commit" },
      );
      assert.equal(failed!.type, "Warning");
      assert.match(failed!.note ?? "", /ended RequestFailed/);
      assert.match(failed!.note ?? "", /fetched \S+, not/);
      // Nothing was asked of the Kustomization: no operation recorded, nothing applied.
      assert.equal((await operationOf("apps"))?.requestToken, before?.requestToken, "no operation recorded");
      assert.equal((await kustomizations.get(namespace, "apps"))?.spec?.suspend, true, "never resumed");
      assert.notEqual(await modeOf("apps-settings"), "unfetched");
    } finally {
      await credential(mirrorUser.password);
    }
    // The worker's backoff, not the dispatcher, asks again; the source fetches now.
    const operation = await eventually(() => appliedAtTip("apps"), {
      timeoutMs: 90_000,
      description: "applied once Flux can fetch again",
    });
    assert.equal(operation.commit, pushed);
    assert.equal(await modeOf("apps-settings"), "unfetched");
  });

  it("a Flux attempt whose GitRepository fetched another commit than the one asked for is looked at as a push notice is: a fix pushed with no notice while an apply fails is applied at the next attempt", async () => {
    await eventually(() => appliedAtTip("apps"), { timeoutMs: 60_000, description: "apps at the tip" });
    await pushBrokenAndFail();
    // The fix is pushed with no push notice, and the worker's refresh is ten minutes away; Flux's
    // source fetches it on its own (its interval, asked for here), so the worker's next attempt,
    // for the broken commit it knows, finds the source at another commit.
    const fixed = await env.git.pushForeignCommit("state", {
      files: {
        "clusters/apps/broken.yaml": null,
        "clusters/apps/settings.yaml": settingsFile("apps", "unnoticed"),
      },
      message: "Fix it, with no notice",
    });
    await requestReconcile(flux.gitRepositories(env.kc), namespace, "state");
    const operation = await eventually(() => appliedAtTip("apps"), {
      timeoutMs: 60_000,
      description: "the fix applied without a push notice",
    });
    assert.equal(operation.commit, fixed);
    assert.equal(await modeOf("apps-settings"), "unnoticed");
    assert.ok(
      env.operator.logs.some((l) =>
        l.startsWith("an applier's source fetched another commit: looking at the remote"),
      ),
      "the worker looked at the remote because the source had moved",
    );
  });

  it("two Kustomizations on one GitRepository take turns", async () => {
    await env.git.pushForeignCommit("state", {
      files: {
        "clusters/apps/settings.yaml": settingsFile("apps", "turns"),
        "clusters/infra/settings.yaml": settingsFile("infra", "turns"),
      },
      message: "Both folders",
    });
    env.operator.workers.notice(branchKey);
    const [apps, infra] = await Promise.all(
      ["apps", "infra"].map((name) =>
        eventually(() => appliedAtTip(name), { timeoutMs: 60_000, description: `${name} applied` }),
      ),
    );
    const span = (o: ApplyOperation) => [Date.parse(o.requestedAt!), Date.parse(o.completedAt!)] as const;
    const [a, b] = [span(apps!), span(infra!)];
    assert.ok(a[1] <= b[0] || b[1] <= a[0], `the operations overlap: ${JSON.stringify([apps, infra])}`);
    assert.equal(await modeOf("apps-settings"), "turns");
    assert.equal(await modeOf("infra-settings"), "turns");
  });

  /**
   * A GitTarget that reapplies on a refusal, with encryption, and a Secret its folder holds in
   * plaintext (applied by Flux, not followed yet): the operator never rewrites it, so an edit
   * of it is refused. Returns the Secret's token as the cluster holds it, and how to edit it.
   */
  const refusingSecret = async (app: string) => {
    const keys = makeOwnedTempDir("apply-keys");
    const { recipient } = await ageIdentity(keys, "flux");
    removeOwnedTempDir(keys);
    await gitTargets(env.kc).jsonPatch((await gitTargets(env.kc).get(namespace, app))!, [
      { op: "add", path: "/spec/onRefusal", value: "Reapply" },
      { op: "add", path: "/spec/encryption", value: { age: { recipients: [recipient] } } },
    ]);
    // The branch worker writes with the target's new settings once the target observed them.
    await eventually(
      async () => {
        const t = await gitTargets(env.kc).get(namespace, app);
        return t?.status?.observedGeneration === t?.metadata.generation;
      },
      { timeoutMs: 30_000, description: `${app} observed Reapply and its encryption` },
    );
    const name = `${app}-token`;
    const fromGit = Buffer.from("from-git").toString("base64");
    await env.git.pushForeignCommit("state", {
      files: {
        [`clusters/${app}/token.yaml`]: `apiVersion: v1\nkind: Secret\nmetadata:\n  name: ${name}\n  namespace: ${namespace}\n  labels:\n    app: ${app}\ndata:\n  token: ${fromGit}\n`,
      },
      message: `A token for ${app}`,
    });
    env.operator.workers.notice(branchKey);
    const token = async () =>
      (await env.core.readNamespacedSecret({ namespace, name }).catch(() => undefined))?.data?.token;
    await eventually(async () => (await token()) === fromGit, {
      timeoutMs: 30_000,
      description: `${name} applied`,
    });
    await eventually(() => appliedAtTip(app), { timeoutMs: 30_000, description: `${app} settled` });
    return {
      edit: (value: string) =>
        env.core.patchNamespacedSecret({
          namespace,
          name,
          body: [{ op: "replace", path: "/data/token", value: Buffer.from(value).toString("base64") }],
        }),
      follow: () =>
        watchRules(env.kc).apply(
          {
            apiVersion: "configbutler.ai/v1alpha3",
            kind: "WatchRule",
            metadata: { name: app, namespace },
            spec: {
              gitTargetRef: { name: app },
              rules: [
                {
                  apiGroups: [""],
                  resources: ["configmaps", "secrets"],
                  objectSelector: { matchLabels: { app } },
                },
              ],
            },
          },
          mirrorFieldManager,
        ),
      /** The Refusal operation that reverted the edit, once the Secret is back at Git's token. */
      reverted: (description: string) =>
        eventually(
          async () => {
            const operation = await operationOf(app);
            return (
              operation?.reason === "Refusal" &&
              operation.phase === "Succeeded" &&
              (await token()) === fromGit &&
              operation
            );
          },
          { timeoutMs: 60_000, description },
        ),
    };
  };

  it("a refusal with Reapply reverts the refused edit on the cluster", async () => {
    const secret = await refusingSecret("apps");
    await secret.follow();
    await eventually(() => appliedAtTip("apps"), { timeoutMs: 30_000, description: "apps settled" });
    await secret.edit("edited-live");
    const reverted = await secret.reverted("the refused edit reverted by a Refusal apply");
    assert.equal(reverted.commit, await tip());
  });

  it("an edit a snapshot finds, not a watch event, is refused and reverted as one", async () => {
    // Edited before the Secret is followed: only the collection's first snapshot sees the edit.
    // (A snapshot taken after its collection replayed, a discarded one say, finds it the same way.)
    const secret = await refusingSecret("infra");
    await secret.edit("edited-unfollowed");
    await secret.follow();
    const reverted = await secret.reverted("the edit the snapshot found reverted by a Refusal apply");
    assert.equal(reverted.commit, await tip());
  });

  it("a late apply over a newer edit is withheld and repaired: the cluster and Git both end at the edit", async () => {
    // An apply, so a window is open (and stays open 10 s after it ends).
    await env.git.pushForeignCommit("state", {
      files: { "clusters/infra/settings.yaml": settingsFile("infra", "window") },
      message: "Open a window",
    });
    env.operator.workers.notice(branchKey);
    await eventually(() => appliedAtTip("apps"), { timeoutMs: 30_000, description: "apps applied" });
    // A person edits; then kustomize-controller writes the old value over it, as a late apply does.
    await env.core.patchNamespacedConfigMap({
      namespace,
      name: "apps-settings",
      body: [{ op: "replace", path: "/data/mode", value: "edited-in-window" }],
    });
    // managedFields times resolve to the second: a write in the edit's second could be the edit
    // itself and is mirrored (a tie). The late apply lands in the next second, as most do.
    await new Promise((resolve) => setTimeout(resolve, 1_050 - (Date.now() % 1_000)));
    await env.core.patchNamespacedConfigMap({
      namespace,
      name: "apps-settings",
      fieldManager: "kustomize-controller",
      body: [{ op: "replace", path: "/data/mode", value: "reverted-by-apply" }],
    });
    const repaired = await eventually(
      async () => {
        const operation = await operationOf("apps");
        return operation?.reason === "Repair" && operation.phase === "Succeeded" && operation;
      },
      { timeoutMs: 60_000, description: "a Repair applied" },
    );
    assert.match(
      (await env.git.fileAt("state", repaired.commit!, "clusters/apps/settings.yaml")) ?? "",
      /mode: edited-in-window/,
      "Git kept the edit",
    );
    await eventually(async () => (await modeOf("apps-settings")) === "edited-in-window", {
      timeoutMs: 30_000,
      description: "the cluster back at the edit",
    });
    assert.doesNotMatch(
      (await env.git.fileAt("state", "main", "clusters/apps/settings.yaml")) ?? "",
      /reverted-by-apply/,
    );
    await eventually(
      async () => (await fluxClaims(env.kc).get(namespace, "apps"))?.status?.repairPending === false,
      {
        timeoutMs: 30_000,
        description: "repairPending answered",
      },
    );
  });

  it("after a restart, the edits made while the operator was down reach Git before anything is applied", async () => {
    await env.operator.stop();
    await env.core.patchNamespacedConfigMap({
      namespace,
      name: "apps-settings",
      body: [{ op: "replace", path: "/data/mode", value: "while-down" }],
    });
    const restarted = startAnotherOperator("apply-restart");
    try {
      await eventually(
        async () =>
          (await env.git.fileAt("state", "main", "clusters/apps/settings.yaml"))?.includes(
            "mode: while-down",
          ),
        { timeoutMs: 60_000, description: "the edit made while down in Git" },
      );
      // The converge at start applies a commit that already holds the edit: the cluster keeps it.
      const operation = await eventually(() => appliedAtTip("apps"), {
        timeoutMs: 60_000,
        description: "the converge at start",
      });
      assert.match(
        (await env.git.fileAt("state", operation.commit!, "clusters/apps/settings.yaml")) ?? "",
        /mode: while-down/,
      );
      assert.equal(await modeOf("apps-settings"), "while-down");
    } finally {
      await restarted.stop();
    }
  });

  it("the operator killed mid-apply recovers the operation from status and suspends the Kustomization", async () => {
    await env.operator.stop();
    await eventually(() => appliedAtTip("apps"), { timeoutMs: 60_000, description: "apps at the tip" });
    const workerRoot = makeOwnedTempDir("apply-kill");
    const logs = makeOwnedTempDir("apply-kill-log");
    // The operator as its own process, so it can be killed: it sees a pushed commit by its refresh.
    const { process: killed } = startOperatorProcess(env.plane.kubeconfigPath, logs, [
      `--in-cluster-kube-providers=${namespace}/self`,
      `--worker-root=${workerRoot}`,
      `--kustomize-path=${kustomizeBinary()}`,
      "--git-refresh-interval=2s",
    ]);
    let recovering: ReturnType<typeof startAnotherOperator> | undefined;
    try {
      // An apply that waits 10 s for a Deployment that never gets ready (no kubelet runs here).
      await kustomizations.apply(
        {
          metadata: { name: "apps", namespace },
          spec: { ...kustomization(namespace, "apps", "./clusters/apps").spec, wait: true, timeout: "10s" },
        } as Kustomization,
        "kubectl",
      );
      await env.git.pushForeignCommit("state", {
        files: { "clusters/apps/slow.yaml": neverReady("slow") },
        message: "A Deployment that never gets ready",
      });
      const running = await eventually(
        async () => {
          killed.assertRunning();
          const [operation, k] = await Promise.all([
            operationOf("apps"),
            kustomizations.get(namespace, "apps"),
          ]);
          return operation?.phase === "Running" && k?.spec?.suspend === false && operation;
        },
        { timeoutMs: 60_000, description: "the apply running, the Kustomization resumed" },
      );
      await killed.kill();
      const killedAt = new Date();
      assert.equal((await kustomizations.get(namespace, "apps"))?.spec?.suspend, false, "left resumed");
      // The next apply needs no wait: the recovered operation is the one that still waits.
      await kustomizations.apply(kustomization(namespace, "apps", "./clusters/apps"), "kubectl");
      recovering = startAnotherOperator("apply-recover");
      const operator = recovering;
      // Followed to its end by the recovering process, which ends it only once its suspend is
      // handled (the converge at start may record its own operation over it at once, so the
      // end is read from that process's report).
      await eventually(
        () =>
          operator.logs.some((l) => l.startsWith("an apply attempt ended") && l.includes('"recovered":true')),
        { timeoutMs: 90_000, description: "the killed process's operation followed to its end" },
      );
      assert.ok(
        operator.logs.some(
          (l) =>
            l.includes("following an apply the last process left in flight") &&
            l.includes(running.requestToken!),
        ),
        "the recorded operation was followed by its token",
      );
      const unfollowed = (await eventsFor("apps", "OperationUnfollowed")).filter(
        (e) => new Date(e.eventTime ?? e.deprecatedLastTimestamp ?? 0) >= killedAt,
      );
      assert.deepEqual(unfollowed, [], "the claim never found it unfollowed");
      // Then the converge at start applies the tip, so the apply the killed process ran is not lost.
      await eventually(() => appliedAtTip("apps"), { timeoutMs: 60_000, description: "converged after" });
    } finally {
      await killed.kill();
      await recovering?.stop();
      removeOwnedTempDir(workerRoot);
      removeOwnedTempDir(logs);
    }
  });

  it("a graceful stop leaves no Kustomization resumed", async () => {
    const operator = startAnotherOperator("apply-stop");
    try {
      await eventually(() => appliedAtTip("apps"), { timeoutMs: 60_000, description: "apps converged" });
      // An apply that waits for a Deployment to be ready: with no kubelet it never is, so the
      // apply runs until its timeout, and the operator stops in the middle of it.
      await kustomizations.apply(
        {
          metadata: { name: "apps", namespace },
          spec: { ...kustomization(namespace, "apps", "./clusters/apps").spec, wait: true, timeout: "10s" },
        } as Kustomization,
        "kubectl",
      );
      await env.git.pushForeignCommit("state", {
        files: { "clusters/apps/never-ready.yaml": neverReady("never-ready") },
        message: "A Deployment that never gets ready",
      });
      operator.workers.notice(branchKey);
      await eventually(async () => (await operationOf("apps"))?.phase === "Running", {
        timeoutMs: 30_000,
        description: "the apply running",
      });
      assert.equal(
        (await kustomizations.get(namespace, "apps"))?.spec?.suspend,
        false,
        "resumed for the apply",
      );
      await operator.stop();
      const stopped = await kustomizations.get(namespace, "apps");
      assert.equal(stopped?.spec?.suspend, true, "suspended as the operator stopped");
      const operation = await operationOf("apps");
      assert.equal(operation?.phase, "Unresolved");
      assert.match(operation?.message ?? "", /stopped/);
    } finally {
      await operator.stop();
    }
  });

  it("a manager restarted during an apply suspends the Kustomization as it stops; the new one completes the same operation and leaves it suspended", async () => {
    // Where the graceful stop left it: the operation Unresolved, with the suspend it recorded as it stopped.
    const left = (await operationOf("apps"))!;
    assert.equal(left.phase, "Unresolved");
    assert.ok(left.suspendToken);
    const startedAt = new Date();
    const operator = startAnotherOperator("apply-restarted");
    try {
      await eventually(
        () =>
          operator.logs.some((l) => l.startsWith("an apply attempt ended") && l.includes('"recovered":true')),
        { timeoutMs: 90_000, description: "the stopped process's operation completed by the new one" },
      );
      assert.ok(
        operator.logs.some(
          (l) =>
            l.includes("following an apply the last process left in flight") &&
            l.includes(left.requestToken!),
        ),
        "the same operation, followed by its token",
      );
      const unfollowed = (await eventsFor("apps", "OperationUnfollowed")).filter(
        (e) => new Date(e.eventTime ?? e.deprecatedLastTimestamp ?? 0) >= startedAt,
      );
      assert.deepEqual(unfollowed, [], "completed by the recovery, not ended unfollowed");
    } finally {
      await operator.stop();
    }
    assert.equal((await kustomizations.get(namespace, "apps"))?.spec?.suspend, true, "left suspended");
  });
});
