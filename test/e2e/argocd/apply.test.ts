// The Flux apply loop's scenarios, for Argo CD where the seeds say the rule is shared: no
// ping-pong, a late write over a newer edit withheld and repaired, an API-created object adopted.
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
import { eventually } from "../../support/wait.ts";

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
    await argo?.stop();
    await env?.stop();
  });

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
});
