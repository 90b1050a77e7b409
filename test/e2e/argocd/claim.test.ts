// ArgoCDClaim against the real kube-apiserver with Argo CD's own Application CRD (v3.5.0, and
// v3.0.23 for the version check). Argo CD's application-controller cannot be built here, so a
// test controller plays its documented part on the Application (test/support/argocd.ts says
// exactly what it does): automated sync when switched on, a set operation copied into
// status.operationState and applied with field manager argocd-controller, the operation
// cleared on completion.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { EventsV1Api } from "@kubernetes/client-node";
import { argoCDClaims, gitTargets, type ApplyOperation } from "../../../generated/v1alpha3/index.ts";
import { ArgoCDClient } from "../../../internal/applier/argocd/client.ts";
import { ArgoCDDispatcher } from "../../../internal/applier/dispatch/index.ts";
import { Following } from "../../../internal/applier/claim/index.ts";
import { ResourceClient } from "../../../internal/kube/resourceclient.ts";
import {
  application,
  applicationType,
  argoCDClaim,
  installArgoCDCrd,
  pausedAnnotation,
  startTestArgoCD,
  type Application,
  type TestArgoCD,
} from "../../support/argocd.ts";
import { applyMirror, mirrorFieldManager } from "../../support/mirror.ts";
import { mirrorUser, startMirrorEnvironment, type MirrorEnvironment } from "../../support/mirrorenv.ts";
import { eventually } from "../../support/wait.ts";

const namespace = "shop";
const branchKey = `${namespace}/main`;
const configMap = (name: string, mode: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: ${namespace}\n  labels:\n    app: shop\ndata:\n  mode: ${mode}\n`;
const rules = [
  { apiGroups: [""], resources: ["configmaps"], objectSelector: { matchLabels: { app: "shop" } } },
];

describe("ArgoCDClaim, with Argo CD's Application CRD and a test application-controller", () => {
  let env: MirrorEnvironment;
  let argo: TestArgoCD;
  let apps: ResourceClient<Application>;

  const app = async (name: string) => (await apps.get(namespace, name))!;
  const claimOf = async (name: string) => argoCDClaims(env.kc).get(namespace, name);
  const conditionOf = async (name: string, type: string) =>
    (await claimOf(name))?.status?.conditions?.find((c) => c.type === type);
  const operationOf = async (name: string): Promise<ApplyOperation | undefined> =>
    (await claimOf(name))?.status?.operation;
  const modeOf = async (name: string) =>
    (await env.core.readNamespacedConfigMap({ namespace, name }).catch(() => undefined))?.data?.mode;
  const tip = () => env.git.branchHead("state", "main");
  const eventsFor = async (name: string, reason: string) =>
    (await env.kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace })).items.filter(
      (e) => e.regarding?.kind === "ArgoCDClaim" && e.regarding.name === name && e.reason === reason,
    );
  /** The claim's sync once it succeeded at the branch's tip. */
  const syncedAtTip = async (name: string) => {
    const [operation, head] = await Promise.all([operationOf(name), tip()]);
    return operation?.phase === "Succeeded" && operation.commit === head && operation;
  };
  const switchOf = (a: Application) => a.spec?.syncPolicy?.automated;
  const ownsSwitch = (a: Application, manager: string) =>
    (a.metadata?.managedFields ?? []).some(
      (f) =>
        f.manager === manager &&
        f.operation === "Apply" &&
        JSON.stringify(f.fieldsV1 ?? {}).includes('"f:enabled"'),
    );
  /** Names a claim from a GitTarget writing `folder`, as the mirror's other targets are. */
  const mirrorFolder = (name: string, folder: string) =>
    applyMirror(env.kc, namespace, env.url, mirrorUser, [
      { name, path: folder, rules, applierClaimRef: { kind: "ArgoCDClaim" as const, name } },
    ]);

  before(async () => {
    // A held Application is read every 2 s, not every minute: a switch turned on by hand is off in seconds.
    env = await startMirrorEnvironment([namespace], { applierClaimRecheckInterval: 2_000 });
    await installArgoCDCrd(env.kc);
    apps = new ResourceClient<Application>(env.kc, applicationType);
    argo = startTestArgoCD(env.kc, env.git, [namespace]);
    await env.git.pushForeignCommit("state", {
      files: { "apps/shop/settings.yaml": configMap("settings", "fast") },
      message: "The folder Argo CD syncs",
    });
  });
  after(async () => {
    await argo?.stop();
    await env?.stop();
  });

  it("an Application with automated sync on is switched off and held", async () => {
    await apps.apply(
      application(namespace, "shop", env.url, "apps/shop", {
        automated: { prune: true },
        retry: { limit: 3, refresh: true },
      }),
      "kubectl",
    );
    // Automated sync on: the test controller syncs the tip on its own, as Argo CD would.
    await eventually(async () => (await modeOf("settings")) === "fast", {
      timeoutMs: 30_000,
      description: "the Application synced on its own",
    });
    await mirrorFolder("shop", "apps/shop");
    await argoCDClaims(env.kc).apply(argoCDClaim(namespace, "shop"), mirrorFieldManager);
    await eventually(async () => (await conditionOf("shop", "InControl"))?.reason === "Suspended", {
      timeoutMs: 30_000,
      description: "the claim holds the Application",
    });
    const held = await app("shop");
    assert.deepEqual(switchOf(held), { prune: true, enabled: false }, "only the switch, prune kept");
    assert.ok(ownsSwitch(held, "gitops-reverser"), "the switch is applied by gitops-reverser");
    assert.equal((await claimOf("shop"))?.status?.previousSuspendState, "Active");
    assert.equal((await eventsFor("shop", "Adopted")).length, 1);
    // Somebody switches it on again (kubectl edit): switched off again, with an Event.
    await apps.jsonPatch(
      held,
      [{ op: "replace", path: "/spec/syncPolicy/automated/enabled", value: true }],
      "kubectl-edit",
    );
    await eventually(async () => switchOf(await app("shop"))?.enabled === false, {
      timeoutMs: 90_000,
      description: "automated sync switched off again",
    });
    // The Event is recorded beside the write, not before it.
    await eventually(async () => (await eventsFor("shop", "ClaimedResourceReconciled")).length >= 1, {
      timeoutMs: 10_000,
      description: "the ClaimedResourceReconciled Event",
    });
    // The converge at start syncs the tip once its snapshots are in Git.
    await eventually(() => syncedAtTip("shop"), { timeoutMs: 60_000, description: "the converge" });
  });

  it("a sync is pinned to the checked commit", async () => {
    const pushed = await env.git.pushForeignCommit("state", {
      files: { "apps/shop/settings.yaml": configMap("settings", "pushed") },
      message: "A change pushed by hand",
    });
    env.operator.workers.notice(branchKey);
    const operation = await eventually(() => syncedAtTip("shop"), {
      timeoutMs: 30_000,
      description: "the pushed commit synced through the claim",
    });
    assert.equal(operation.commit, pushed);
    assert.equal(operation.reason, "ForeignCommit");
    assert.equal(await modeOf("settings"), "pushed");
    const ours = argo.syncs.filter((s) => s.operation.initiatedBy?.username === "gitops-reverser").at(-1)!;
    assert.equal(ours.operation.sync?.revision, pushed, "pinned to the commit");
    assert.equal(ours.operation.sync?.prune, true, "prune from automated.prune");
    assert.deepEqual(ours.operation.initiatedBy, { username: "gitops-reverser", automated: true });
    assert.deepEqual(ours.operation.retry, { limit: 3 }, "the Application's retry, refresh dropped");
    const state = (await app("shop")).status?.operationState;
    assert.equal(state?.phase, "Succeeded");
    assert.equal(state?.syncResult?.revision, pushed);
  });

  it("a running operation is waited out, never replaced", async () => {
    // Somebody's sync is set and running (the test controller leaves the paused Application alone).
    const before = await app("shop");
    await apps.jsonPatch(before, [
      { op: "add", path: "/metadata/annotations", value: { [pausedAnnotation]: "true" } },
      {
        op: "add",
        path: "/operation",
        value: {
          sync: { revision: before.status?.operationState?.syncResult?.revision },
          initiatedBy: { username: "admin" },
        },
      },
    ]);
    const pushed = await env.git.pushForeignCommit("state", {
      files: { "apps/shop/settings.yaml": configMap("settings", "after-wait") },
      message: "Pushed while a sync runs",
    });
    env.operator.workers.notice(branchKey);
    // The worker's attempt waits: the operation set stays the admin's.
    const deadline = Date.now() + 3_000;
    while (Date.now() < deadline) {
      assert.equal((await app("shop")).operation?.initiatedBy?.username, "admin", "never replaced");
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const paused = await app("shop");
    await apps.jsonPatch(paused, [
      { op: "remove", path: `/metadata/annotations/${pausedAnnotation.replace("/", "~1")}` },
    ]);
    const operation = await eventually(() => syncedAtTip("shop"), {
      timeoutMs: 30_000,
      description: "the pushed commit synced once the running sync ended",
    });
    assert.equal(operation.commit, pushed);
    assert.equal(await modeOf("settings"), "after-wait");
  });

  it("an ApplicationSet-owned Application is refused, never written", async () => {
    const generated = application(namespace, "generated", env.url, "apps/generated", { automated: {} });
    // Its syncs are not what this test watches: the test controller leaves it alone.
    generated.metadata!.annotations = { [pausedAnnotation]: "true" };
    generated.metadata!.ownerReferences = [
      {
        apiVersion: "argoproj.io/v1alpha1",
        kind: "ApplicationSet",
        name: "all-shops",
        uid: "00000000-0000-0000-0000-000000000001",
        controller: true,
      },
    ];
    await apps.apply(generated, "argocd-applicationset-controller");
    const written = (await app("generated")).metadata!.resourceVersion;
    await mirrorFolder("generated", "apps/generated");
    await argoCDClaims(env.kc).apply(argoCDClaim(namespace, "generated"), mirrorFieldManager);
    const configured = await eventually(
      async () => {
        const c = await conditionOf("generated", "Configured");
        return c?.status === "False" && c;
      },
      { timeoutMs: 30_000, description: "the claim refused" },
    );
    assert.equal(configured.reason, "OwnedByApplicationSet");
    assert.match(configured.message ?? "", /all-shops/);
    const after = await app("generated");
    assert.equal(after.metadata!.resourceVersion, written, "never written");
    assert.ok(!ownsSwitch(after, "gitops-reverser"));
    assert.equal((await claimOf("generated"))?.metadata?.finalizers, undefined, "holds nothing");
  });

  it("a lost update is resolved by its token", async () => {
    // The dispatcher, driven directly, with a client whose answer to the sync request is lost:
    // once after the update was made, once before.
    const claim = (await claimOf("shop"))!;
    const target = (await gitTargets(env.kc).get(namespace, "shop"))!;
    let mode: "made" | "never" = "made";
    const dispatcher = new ArgoCDDispatcher({
      claims: argoCDClaims(env.kc),
      targets: gitTargets(env.kc),
      clusterOf: () => env.kc,
      fieldManager: "gitops-reverser",
      operationManager: "gitops-reverser-applies",
      following: new Following(),
      client: (kc, manager) => {
        const client = new ArgoCDClient(kc, manager);
        const requestSync = client.requestSync.bind(client);
        client.requestSync = async (read, operation) => {
          if (mode === "made") await requestSync(read, operation);
          throw new Error("socket hang up");
        };
        return client;
      },
    });
    const stop = new AbortController();
    const running = dispatcher.start(stop.signal);
    try {
      const head = (await tip())!;
      const attempt = (token: string) => ({
        claim: { kind: "ArgoCDClaim" as const, namespace, name: "shop" },
        commit: head,
        token,
        targets: [{ uid: target.metadata.uid!, ref: { namespace, name: "shop" }, reason: "Repair" as const }],
      });
      assert.ok(claim.status?.operation?.phase === "Succeeded");
      const landed = await dispatcher.dispatch(
        { url: env.url, branch: "main" },
        attempt("lost-1"),
        () => true,
      );
      assert.deepEqual(
        landed,
        { kind: "succeeded", commit: head },
        "the update landed: followed by its token",
      );
      mode = "never";
      const before = await app("shop");
      const lost = await dispatcher.dispatch({ url: env.url, branch: "main" }, attempt("lost-2"), () => true);
      assert.equal(lost.kind, "failed", "never landed: Failed, and the worker asks again");
      const after = await app("shop");
      assert.equal(
        after.metadata?.annotations?.["argocd.argoproj.io/refresh"],
        "normal",
        "refreshed at the version read",
      );
      assert.notEqual(after.metadata?.resourceVersion, before.metadata?.resourceVersion);
      assert.equal(after.operation, undefined, "no sync set");
      assert.match((await operationOf("shop"))?.message ?? "", /never landed/);
    } finally {
      stop.abort();
      await running;
    }
  });

  it("hand-back restores the switch", async () => {
    // Held while on (previousSuspendState Active): given back, Argo CD's spec turns it on again.
    await argoCDClaims(env.kc).delete(namespace, "shop");
    await eventually(async () => (await claimOf("shop")) === undefined, {
      timeoutMs: 30_000,
      description: "the claim handed back and gone",
    });
    const released = await app("shop");
    assert.ok(!ownsSwitch(released, "gitops-reverser"), "the switch given up");
    assert.notEqual(switchOf(released)?.enabled, false, "automated sync on again, as before the claim");
    assert.equal(switchOf(released)?.prune, true);
    // Held while off, with no automated block at all (previousSuspendState Suspended): left off.
    await apps.apply(application(namespace, "manual", env.url, "apps/shop"), "kubectl");
    await mirrorFolder("manual", "apps/manual");
    await argoCDClaims(env.kc).apply(argoCDClaim(namespace, "manual"), mirrorFieldManager);
    await eventually(async () => (await conditionOf("manual", "InControl"))?.reason === "Suspended", {
      timeoutMs: 30_000,
      description: "the second claim holds its Application",
    });
    assert.equal((await claimOf("manual"))?.status?.previousSuspendState, "Suspended");
    await argoCDClaims(env.kc).delete(namespace, "manual");
    await eventually(async () => (await claimOf("manual")) === undefined, {
      timeoutMs: 30_000,
      description: "the second claim handed back and gone",
    });
    const manual = await app("manual");
    const automated = switchOf(manual);
    assert.ok(
      automated === undefined || automated.enabled === false,
      `automated sync still off: ${JSON.stringify(automated)}`,
    );
    assert.ok(!ownsSwitch(manual, "gitops-reverser"));
  });
});

describe("ArgoCDClaim against an Argo CD older than 3.1", () => {
  let env: MirrorEnvironment;
  let apps: ResourceClient<Application>;

  before(async () => {
    env = await startMirrorEnvironment([namespace]);
    await installArgoCDCrd(env.kc, "old");
    apps = new ResourceClient<Application>(env.kc, applicationType);
  });
  after(async () => env?.stop());

  it("is refused as ArgoCDVersionNotSupported, and the Application is never written", async () => {
    await apps.apply(
      application(namespace, "shop", env.url, "apps/shop", { automated: { prune: true } }),
      "kubectl",
    );
    const written = (await apps.get(namespace, "shop"))!.metadata!.resourceVersion;
    await applyMirror(env.kc, namespace, env.url, mirrorUser, [
      {
        name: "shop",
        path: "apps/shop",
        rules,
        applierClaimRef: { kind: "ArgoCDClaim" as const, name: "shop" },
      },
    ]);
    await argoCDClaims(env.kc).apply(argoCDClaim(namespace, "shop"), mirrorFieldManager);
    const configured = await eventually(
      async () => {
        const c = (await argoCDClaims(env.kc).get(namespace, "shop"))?.status?.conditions?.find(
          (x) => x.type === "Configured",
        );
        return c?.status === "False" && c;
      },
      { timeoutMs: 30_000, description: "the claim refused" },
    );
    assert.equal(configured.reason, "ArgoCDVersionNotSupported");
    assert.match(configured.message ?? "", /3\.1/);
    assert.equal((await apps.get(namespace, "shop"))!.metadata!.resourceVersion, written);
  });
});
