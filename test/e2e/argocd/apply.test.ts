// The Flux apply loop's scenarios, for Argo CD where the seeds say the rule is shared: no
// ping-pong, a late write over a newer edit withheld and repaired, an API-created object adopted,
// a snapshot discarded while a sync is held (Git ahead), and the restart's three-way rule
// against the Application's synced revision.
// Against the real kube-apiserver with Argo CD's own Application CRD, and the test
// application-controller in Argo CD's place (test/support/argocd.ts says what it does and why).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { argoCDClaims, type ApplyOperation } from "../../../generated/v1alpha3/index.ts";
import { ResourceClient } from "../../../internal/kube/resourceclient.ts";
import {
  application,
  applicationType,
  argoCDClaim,
  installArgoCDCrd,
  pausedAnnotation,
  startTestArgoCD,
  trackingAnnotation,
  type Application,
  type TestArgoCD,
} from "../../support/argocd.ts";
import { applyMirror, mirrorFieldManager } from "../../support/mirror.ts";
import { mirrorUser, startMirrorEnvironment, type MirrorEnvironment } from "../../support/mirrorenv.ts";
import { startOwnedOperator } from "../../support/operator.ts";
import { eventually } from "../../support/wait.ts";
import { EventsV1Api } from "@kubernetes/client-node";
import { staleSnapshots, watchSessionEnds } from "../../../internal/telemetry/instruments.ts";

/** How many snapshots of the GitTarget the operator (in this process) counted with `outcome`. */
const staleCount = async (outcome: string) =>
  (await staleSnapshots.get()).values.find(
    (v) => v.labels.outcome === outcome && v.labels.gittarget_name === "shop",
  )?.value ?? 0;

/** How many of the GitTarget's watch connections ended for a fresh snapshot. */
const resyncCount = async () =>
  (await watchSessionEnds.get()).values
    .filter((v) => v.labels.reason === "resync" && v.labels.gittarget_name === "shop")
    .reduce((sum, v) => sum + v.value, 0);

const namespace = "shop";
const branchKey = `${namespace}/main`;
const file = "apps/shop/settings.yaml";
const configMap = (name: string, mode: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: ${namespace}\n  labels:\n    app: shop\ndata:\n  mode: ${mode}\n`;

describe("Argo CD syncs when the branch worker decides", () => {
  let env: MirrorEnvironment;
  let argo: TestArgoCD;
  let apps: ResourceClient<Application>;

  const operationOf = async (): Promise<ApplyOperation | undefined> =>
    (await argoCDClaims(env.kc).get(namespace, "shop"))?.status?.operation;
  const modeOf = async (name: string) =>
    (await env.core.readNamespacedConfigMap({ namespace, name }).catch(() => undefined))?.data?.mode;
  const tip = () => env.git.branchHead("state", "main");
  const inGit = async (text: string, path = file) =>
    (await env.git.fileAt("state", "main", path))?.includes(text);
  const syncedAtTip = async () => {
    const [operation, head] = await Promise.all([operationOf(), tip()]);
    return operation?.phase === "Succeeded" && operation.commit === head && operation;
  };
  const edit = (name: string, mode: string) =>
    env.core.patchNamespacedConfigMap({
      namespace,
      name,
      fieldManager: "kubectl-edit",
      body: [{ op: "replace", path: "/data/mode", value: mode }],
    });
  const setPaused = async (paused: boolean) => {
    const app = (await apps.get(namespace, "shop"))!;
    const annotations = { ...app.metadata?.annotations };
    if (paused) annotations[pausedAnnotation] = "true";
    else delete annotations[pausedAnnotation];
    await apps.apply({ metadata: { name: "shop", namespace, annotations } }, "test-pause", true);
  };

  before(async () => {
    env = await startMirrorEnvironment([namespace], {}, { attributed: true });
    await installArgoCDCrd(env.kc);
    apps = new ResourceClient<Application>(env.kc, applicationType);
    argo = startTestArgoCD(env.kc, env.git, [namespace]);
    await env.git.pushForeignCommit("state", {
      files: { [file]: configMap("settings", "fast") },
      message: "The folder Argo CD syncs",
    });
    await apps.apply(
      application(namespace, "shop", env.url, "apps/shop", { automated: { enabled: false, prune: true } }),
      "kubectl",
    );
    await applyMirror(env.kc, namespace, env.url, mirrorUser, [
      {
        name: "shop",
        path: "apps/shop",
        rules: [
          { apiGroups: [""], resources: ["configmaps"], objectSelector: { matchLabels: { app: "shop" } } },
        ],
        idleTimeout: "0s",
        maxDuration: "60s",
        applierClaimRef: { kind: "ArgoCDClaim" as const, name: "shop" },
      },
    ]);
    await argoCDClaims(env.kc).apply(argoCDClaim(namespace, "shop"), mirrorFieldManager);
    // The converge at start syncs the tip (the folder was never synced: automated sync was off).
    await eventually(syncedAtTip, { timeoutMs: 60_000, description: "the converge at start" });
    assert.equal(await modeOf("settings"), "fast");
  });
  after(async () => {
    await current?.stop();
    await argo?.stop();
    await env?.stop();
  });

  /** The operator from a restart on: the environment's until then. */
  let current: { stop(): Promise<void> } | undefined;
  /** Stops the operator, does `whileDown`, and starts a new one on the same cluster and repository. */
  const restartAfter = async (whileDown: () => Promise<void>) => {
    await (current ?? env.operator).stop();
    await whileDown();
    current = startOwnedOperator(env.operatorKc, "argocd-restarted", {
      ...env.operatorSettings,
    });
  };
  const overrides = async (commit: string) =>
    (await env.kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace })).items.filter(
      (e) =>
        e.reason === "PushedChangeOverridden" &&
        e.regarding?.kind === "GitTarget" &&
        e.note?.includes(commit.slice(0, 12)),
    );

  it("two live edits seconds apart never ping-pong: Git and the cluster both end at the second", async () => {
    const before = await tip();
    await edit("settings", "first");
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    await edit("settings", "second");
    await eventually(() => inGit("mode: second"), { timeoutMs: 30_000, description: "Git holds the second" });
    // A foreign commit elsewhere makes the Application sync the tip: the edits must survive it.
    await env.git.pushForeignCommit("state", {
      files: { "README.md": "# State\n\nelsewhere\n" },
      message: "Elsewhere",
    });
    env.operator.workers.notice(branchKey);
    const operation = await eventually(syncedAtTip, { timeoutMs: 30_000, description: "the tip synced" });
    assert.equal(operation.reason, "ForeignCommit");
    assert.equal(await modeOf("settings"), "second");
    assert.ok(await inGit("mode: second"));
    const authors = await env.git.gitIn("state", ["log", "--format=%an", `${before}..main`]);
    assert.doesNotMatch(authors, /argocd/, "no commit carries a sync's echo");
  });

  it("a late write over a newer edit is withheld and repaired: the cluster and Git both end at the edit", async () => {
    // A sync is set while the test controller holds it, so it runs late.
    await setPaused(true);
    await env.git.pushForeignCommit("state", {
      files: { [file]: configMap("settings", "pushed") },
      message: "Pushed",
    });
    env.operator.workers.notice(branchKey);
    await eventually(
      async () => (await apps.get(namespace, "shop"))?.operation?.initiatedBy?.username === "gitops-reverser",
      { timeoutMs: 30_000, description: "the sync set" },
    );
    // A person edits after the sync was sent; the sync then writes the pushed value over it.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    await edit("settings", "edited");
    await eventually(() => inGit("mode: edited"), { timeoutMs: 30_000, description: "the edit in Git" });
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    await setPaused(false);
    // The late write is withheld (Git keeps the edit), and a Repair syncs the tip again.
    await eventually(
      async () =>
        (await modeOf("settings")) === "edited" &&
        (await operationOf())?.reason === "Repair" &&
        (await syncedAtTip()),
      { timeoutMs: 60_000, description: "the Repair synced the edit back" },
    );
    assert.ok(await inGit("mode: edited"), "Git kept the edit");
    await eventually(
      async () => (await argoCDClaims(env.kc).get(namespace, "shop"))?.status?.repairPending === false,
      { timeoutMs: 30_000, description: "repairPending answered" },
    );
  });

  it("an API-created object is adopted, so a Git-side delete prunes it", async () => {
    await env.core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "extra", labels: { app: "shop" } }, data: { mode: "new" } },
    });
    const placed = () =>
      env.git.listFiles("state", "main", "apps/shop").then((f) => f.find((p) => p.includes("extra")));
    const path = await eventually(placed, { timeoutMs: 30_000, description: "the new object in Git" });
    // The adopt: a sync stamps Argo CD's tracking annotation on it.
    await eventually(
      async () =>
        (await env.core.readNamespacedConfigMap({ namespace, name: "extra" })).metadata?.annotations?.[
          trackingAnnotation
        ] !== undefined && (await syncedAtTip()),
      { timeoutMs: 30_000, description: "the object adopted by a sync" },
    );
    await env.git.pushForeignCommit("state", {
      files: { [path]: null },
      message: "Remove extra",
    });
    env.operator.workers.notice(branchKey);
    await eventually(async () => (await modeOf("extra")) === undefined, {
      timeoutMs: 30_000,
      description: "the Git-side delete pruned it",
    });
  });

  it("a snapshot taken while a pushed commit is not yet synced is discarded, and the pushed value reaches the cluster", async () => {
    await eventually(syncedAtTip, { timeoutMs: 30_000, description: "synced at the tip" });
    const discardedBefore = await staleCount("discarded");
    // The sync of a pushed change is held by the test controller: Git is ahead meanwhile.
    await setPaused(true);
    const pushed = await env.git.pushForeignCommit("state", {
      files: { [file]: configMap("settings", "pushed-ahead") },
      message: "A change not synced yet",
    });
    env.operator.workers.notice(branchKey);
    await eventually(async () => (await operationOf())?.commit === pushed, {
      timeoutMs: 30_000,
      description: "the sync of the pushed commit set, and held",
    });
    // A re-list snapshot of the cluster's old state arrives while Git is ahead.
    const target = { namespace, name: "shop" };
    const resyncsBefore = await resyncCount();
    env.operator.sourceContexts.resync(target);
    await eventually(
      async () => (await staleCount("discarded")) > discardedBefore && (await resyncCount()) > resyncsBefore,
      {
        timeoutMs: 30_000,
        description: "the re-list's snapshot discarded",
      },
    );
    await setPaused(false);
    await eventually(async () => (await modeOf("settings")) === "pushed-ahead" && (await syncedAtTip()), {
      timeoutMs: 60_000,
      description: "the pushed value synced",
    });
    // Git never went back: every version of the file since the push holds the pushed value.
    for (const [commit, content] of await env.git.versionsSince("state", pushed, file))
      assert.match(content, /mode: pushed-ahead/, `at ${commit}`);
  });

  it("a commit pushed while the operator is down is synced at start when nobody edited the object live (the base: the Application's synced revision)", async () => {
    await eventually(syncedAtTip, { timeoutMs: 30_000, description: "synced at the tip before the stop" });
    let pushed = "";
    await restartAfter(async () => {
      pushed = await env.git.pushForeignCommit("state", {
        files: { [file]: configMap("settings", "pushed-while-down") },
        message: "Pushed while the operator is down",
      });
    });
    await eventually(async () => (await modeOf("settings")) === "pushed-while-down", {
      timeoutMs: 90_000,
      description: "the pushed value on the cluster",
    });
    for (const [commit, content] of await env.git.versionsSince("state", pushed, file))
      assert.match(content, /mode: pushed-while-down/, `at ${commit}`);
    assert.deepEqual(await overrides(pushed), []);
  });

  it("a commit pushed while the operator is down loses to a live edit of the same object, and a PushedChangeOverridden Event names the commit", async () => {
    await eventually(syncedAtTip, { timeoutMs: 30_000, description: "synced at the tip before the stop" });
    let pushed = "";
    await restartAfter(async () => {
      pushed = await env.git.pushForeignCommit("state", {
        files: { [file]: configMap("settings", "pushed-and-edited") },
        message: "Pushed while the operator is down, and edited live too",
      });
      await edit("settings", "edited-while-down");
    });
    await eventually(() => inGit("mode: edited-while-down"), {
      timeoutMs: 90_000,
      description: "the live edit in Git: the API wins",
    });
    const [warning] = await eventually(
      async () => {
        const found = await overrides(pushed);
        return found.length > 0 && found;
      },
      { timeoutMs: 60_000, description: "a PushedChangeOverridden Event naming the pushed commit" },
    );
    assert.equal(warning!.type, "Warning");
    assert.match(warning!.note ?? "", /ConfigMap shop\/settings/);
    assert.equal(await modeOf("settings"), "edited-while-down", "the cluster keeps the edit");
  });
});
