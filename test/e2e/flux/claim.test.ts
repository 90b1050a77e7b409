// FluxClaim against the real Flux source-controller and kustomize-controller, run out of
// cluster against the test control plane: the claim holds a Kustomization suspended while an
// eligible GitTarget names it, suspends it again when somebody resumes it, refuses a
// Kustomization whose manifest applies spec.suspend, and hands it back as it stood.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { EventsV1Api, type KubernetesObject } from "@kubernetes/client-node";
import { fluxClaims, gitTargets } from "../../../generated/v1alpha3/index.ts";
import { kustomizationType, type Kustomization } from "../../../internal/applier/flux/view.ts";
import { ResourceClient } from "../../../internal/kube/resourceclient.ts";
import { fluxClaim, fluxSource, kustomization, startFlux, type Flux } from "../../support/flux.ts";
import { applyMirror, mirrorFieldManager } from "../../support/mirror.ts";
import { mirrorUser, startMirrorEnvironment, type MirrorEnvironment } from "../../support/mirrorenv.ts";
import { eventually } from "../../support/wait.ts";
import { kubectlOk } from "../../support/kubectl.ts";

const namespace = "shop";
/** Each target mirrors only the ConfigMaps labelled for it. */
const rules = (app: string) => [
  { apiGroups: [""], resources: ["configmaps"], objectSelector: { matchLabels: { app } } },
];

describe("FluxClaim holds a Kustomization with the real Flux controllers", () => {
  let env: MirrorEnvironment;
  let flux: Flux;
  let kustomizations: ResourceClient<Kustomization>;

  const claimOf = (name: string) => fluxClaims(env.kc).get(namespace, name);
  const conditionOf = async (name: string, type: string) =>
    (await claimOf(name))?.status?.conditions?.find((c) => c.type === type);
  const applyClaim = (name: string, kustomizationName = name) =>
    fluxClaims(env.kc).apply(fluxClaim(namespace, name, kustomizationName), mirrorFieldManager);
  const eventsFor = async (name: string, reason: string) =>
    (await env.kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace })).items.filter(
      (e) => e.regarding?.kind === "FluxClaim" && e.regarding.name === name && e.reason === reason,
    );
  const suspendManagers = (k: KubernetesObject | undefined) =>
    (k?.metadata?.managedFields ?? [])
      .filter((m) => Object.hasOwn((m.fieldsV1 as { "f:spec"?: object })?.["f:spec"] ?? {}, "f:suspend"))
      .map((m) => `${m.manager}:${m.operation}`);
  /** Held: suspended under our field manager, and the token we wrote handled by Flux. */
  const heldAndHandled = async (name: string) => {
    const k = await kustomizations.get(namespace, name);
    const token = k?.metadata?.annotations?.["reconcile.fluxcd.io/requestedAt"];
    return (
      k?.spec?.suspend === true &&
      suspendManagers(k).includes("gitops-reverser:Apply") &&
      token !== undefined &&
      k.status?.lastHandledReconcileAt === token &&
      k
    );
  };

  before(async () => {
    // A held Kustomization is read every 2 s, not every minute: a resume by hand is answered in seconds.
    env = await startMirrorEnvironment([namespace], { applierClaimRecheckInterval: 2_000 });
    flux = await startFlux(env.plane);
    kustomizations = new ResourceClient<Kustomization>(env.kc, kustomizationType);
    // Each Kustomization's folder holds one ConfigMap, so its applies succeed.
    await env.git.pushForeignCommit("state", {
      files: Object.fromEntries(
        ["apps", "infra", "legacy", "idle"].map((app) => [
          `clusters/${app}/settings.yaml`,
          `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${app}-settings\n  namespace: ${namespace}\n  labels: {app: ${app}}\ndata:\n  mode: fast\n`,
        ]),
      ),
      message: "The folders Flux applies",
    });
    await fluxSource(env, namespace, mirrorUser);
    for (const name of ["apps", "infra", "legacy", "idle"]) {
      await kustomizations.apply(kustomization(namespace, name, `./clusters/${name}`), "kubectl");
    }
    await applyMirror(env.kc, namespace, env.url, mirrorUser, [
      {
        name: "apps",
        path: "clusters/apps",
        rules: rules("apps"),
        applierClaimRef: { kind: "FluxClaim", name: "apps" },
      },
      {
        name: "infra",
        path: "clusters/infra",
        rules: rules("infra"),
        applierClaimRef: { kind: "FluxClaim", name: "infra" },
      },
      {
        name: "legacy",
        path: "clusters/legacy",
        rules: rules("legacy"),
        applierClaimRef: { kind: "FluxClaim", name: "legacy" },
      },
    ]);
  });
  after(async () => {
    await flux?.stop();
    await env?.stop();
  });

  it("an eligible GitTarget's claim suspends its Kustomization, with an Adopted Event and ApplierClaimReady", async () => {
    await applyClaim("apps");
    await eventually(() => heldAndHandled("apps"), {
      timeoutMs: 60_000,
      description: "Kustomization apps held",
    });
    await eventually(async () => (await conditionOf("apps", "Ready"))?.status === "True", {
      timeoutMs: 30_000,
      description: "FluxClaim apps Ready",
    });
    // The branch worker's converge at start applies once the claim holds it; then it is idle.
    await eventually(async () => (await claimOf("apps"))?.status?.operation?.phase === "Succeeded", {
      timeoutMs: 60_000,
      description: "the converge at start applied",
    });
    await eventually(async () => (await conditionOf("apps", "InControl"))?.reason === "Suspended", {
      timeoutMs: 30_000,
      description: "FluxClaim apps Suspended after the converge",
    });
    const claim = await claimOf("apps");
    assert.equal(claim?.status?.previousSuspendState, "Active");
    assert.equal(claim?.status?.source?.branch, "main");
    assert.match(claim?.status?.source?.revision ?? "", /^main@sha1:[0-9a-f]{40}$/);
    assert.equal((await eventsFor("apps", "Adopted")).length, 1);
    await eventually(
      async () =>
        (await gitTargets(env.kc).get(namespace, "apps"))?.status?.conditions?.find(
          (c) => c.type === "ApplierClaimReady",
        )?.status === "True",
      { timeoutMs: 30_000, description: "GitTarget apps ApplierClaimReady" },
    );
  });

  it("a claim nothing names is Ready, and leaves its Kustomization alone", async () => {
    await applyClaim("idle");
    await eventually(async () => (await conditionOf("idle", "Configured"))?.reason === "NotReferenced", {
      timeoutMs: 30_000,
      description: "FluxClaim idle NotReferenced",
    });
    assert.equal((await conditionOf("idle", "Ready"))?.status, "True");
    const k = await kustomizations.get(namespace, "idle");
    assert.notEqual(k?.spec?.suspend, true);
    assert.deepEqual(suspendManagers(k), []);
  });

  it("a Kustomization resumed by hand is suspended again with an Event", async () => {
    await eventually(() => heldAndHandled("apps"), {
      timeoutMs: 60_000,
      description: "Kustomization apps held",
    });
    // The branch worker's converge at start resumes it once; a resume by hand during that
    // operation is that operation's, so the hand comes after it.
    await eventually(async () => (await claimOf("apps"))?.status?.operation?.phase === "Succeeded", {
      timeoutMs: 60_000,
      description: "the converge at start applied",
    });
    await eventually(() => heldAndHandled("apps"), {
      timeoutMs: 30_000,
      description: "Kustomization apps held after the converge",
    });
    // What `flux resume ks apps` does: a merge patch of spec.suspend: false.
    await kubectlOk(
      env.plane,
      ...[
        "patch",
        "kustomization",
        "apps",
        "-n",
        namespace,
        "--type=merge",
        "-p",
        '{"spec":{"suspend":false}}',
        "--field-manager=flux",
      ],
    );
    await eventually(async () => (await eventsFor("apps", "ClaimedResourceReconciled")).length > 0, {
      timeoutMs: 90_000,
      description: "a ClaimedResourceReconciled Event",
    });
    await eventually(() => heldAndHandled("apps"), {
      timeoutMs: 60_000,
      description: "Kustomization apps held again",
    });
    await eventually(async () => (await claimOf("apps"))?.status?.operation?.phase === "Succeeded", {
      timeoutMs: 30_000,
      description: "the resume followed to its end",
    });
    const operation = (await claimOf("apps"))?.status?.operation;
    assert.equal(operation?.requestToken, undefined);
    assert.ok(operation?.suspendToken);
  });

  it("a manifest that sets spec.suspend makes the claim SuspendOwnedElsewhere", async () => {
    // As a parent Kustomization applies it: server-side, under kustomize-controller.
    await kustomizations.apply(
      {
        ...kustomization(namespace, "infra", "./clusters/infra"),
        spec: { ...kustomization(namespace, "infra", "./clusters/infra").spec, suspend: false },
      },
      "kustomize-controller",
    );
    await applyClaim("infra");
    await eventually(
      async () => (await conditionOf("infra", "Configured"))?.reason === "SuspendOwnedElsewhere",
      {
        timeoutMs: 30_000,
        description: "FluxClaim infra SuspendOwnedElsewhere",
      },
    );
    assert.match((await conditionOf("infra", "Configured"))!.message, /kustomize-controller/);
    assert.equal((await conditionOf("infra", "Stalled"))?.status, "True");
    const k = await kustomizations.get(namespace, "infra");
    assert.equal(k?.spec?.suspend, false);
    assert.ok(!suspendManagers(k).some((m) => m.startsWith("gitops-reverser")), "nothing is held");
  });

  it("an object another applier owns is not mirrored into a coordinated folder", async () => {
    const configMap = (name: string, labels: Record<string, string>) =>
      env.core.createNamespacedConfigMap({
        namespace,
        body: { metadata: { name, namespace, labels: { app: "apps", ...labels } }, data: { mode: "live" } },
      });
    const owner = (kustomization: string) => ({
      "kustomize.toolkit.fluxcd.io/name": kustomization,
      "kustomize.toolkit.fluxcd.io/namespace": namespace,
    });
    // One collection delivers in order: once the last is in Git, the first was judged.
    await configMap("apps-foreign", owner("infra"));
    await configMap("apps-own", owner("apps"));
    await configMap("apps-plain", {});
    const files = async () =>
      (await env.git.gitIn("state", ["ls-tree", "-r", "--name-only", "main", "--", "clusters/apps"])).split(
        "\n",
      );
    await eventually(async () => (await files()).some((f) => f.endsWith("/apps-plain.yaml")), {
      timeoutMs: 60_000,
      description: "the unowned ConfigMap in Git",
    });
    const listed = await files();
    assert.ok(
      listed.some((f) => f.endsWith("/apps-own.yaml")),
      "the folder's own applier's object is mirrored",
    );
    assert.ok(
      !listed.some((f) => f.includes("apps-foreign")),
      `another applier's object is kept out: ${listed.join(", ")}`,
    );
  });

  it("a folder a claim's applier applies is founded with its bootstrap files before it holds an object", async () => {
    // The GitTarget first, then its claim: naming the claim later founds the folder too.
    await applyMirror(env.kc, namespace, env.url, mirrorUser, [
      {
        name: "fresh",
        path: "clusters/fresh",
        rules: rules("fresh"),
        applierClaimRef: { kind: "FluxClaim", name: "fresh" },
      },
    ]);
    await eventually(
      async () => (await gitTargets(env.kc).get(namespace, "fresh"))?.status?.streams?.running === 1,
      {
        timeoutMs: 30_000,
        description: "GitTarget fresh streaming",
      },
    );
    await applyClaim("fresh");
    await eventually(
      async () => (await env.git.fileAt("state", "main", "clusters/fresh/README.md")) !== undefined,
      {
        timeoutMs: 60_000,
        description: "clusters/fresh/README.md in Git",
      },
    );
    assert.ok(await env.git.fileAt("state", "main", "clusters/fresh/.gittargetignore"));
  });

  it("deleting the claim hands the Kustomization back, suspended if it was suspended before", async () => {
    // legacy was suspended before any claim held it, as `flux suspend` leaves it.
    await kubectlOk(
      env.plane,
      ...[
        "patch",
        "kustomization",
        "legacy",
        "-n",
        namespace,
        "--type=merge",
        "-p",
        '{"spec":{"suspend":true}}',
        "--field-manager=flux",
      ],
    );
    await applyClaim("legacy");
    await eventually(() => heldAndHandled("legacy"), {
      timeoutMs: 60_000,
      description: "Kustomization legacy held",
    });
    assert.equal((await claimOf("legacy"))?.status?.previousSuspendState, "Suspended");

    await fluxClaims(env.kc).delete(namespace, "apps");
    await fluxClaims(env.kc).delete(namespace, "legacy");
    await eventually(async () => !(await claimOf("apps")) && !(await claimOf("legacy")), {
      timeoutMs: 60_000,
      description: "both claims gone",
    });
    const apps = await kustomizations.get(namespace, "apps");
    assert.notEqual(apps?.spec?.suspend, true, "apps, Active before, is resumed");
    assert.deepEqual(suspendManagers(apps), [], "and spec.suspend is Flux's again");
    const legacy = await kustomizations.get(namespace, "legacy");
    assert.equal(legacy?.spec?.suspend, true, "legacy, suspended before, stays suspended");
  });
});
