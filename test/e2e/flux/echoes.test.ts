// An apply's echoes are not committed (applier-claims.md, "The apply window"), against the real
// source-controller and kustomize-controller. Each round a person edits one value live (the
// mirror commits it), then somebody pushes a change to another value of the same object, which
// the claim applies: kustomize-controller's write of what Git already holds is the apply's echo,
// and must never reach Git as a change of its own, nor drop the live edit. Attribution is on, as
// production runs it: alice's edits are authored by alice, and an echo that reached Git would
// be authored by Flux's identity. A few rounds show the rule; `make soak` runs fifty.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CoreV1Api } from "@kubernetes/client-node";
import { fluxClaims, type ApplyOperation } from "../../../generated/v1alpha3/index.ts";
import { kustomizationType, type Kustomization } from "../../../internal/applier/flux/view.ts";
import { ResourceClient } from "../../../internal/kube/resourceclient.ts";
import { applyEchoes, applyWindowCollisions } from "../../../internal/telemetry/instruments.ts";
import { fluxClaim, fluxSource, kustomization, startFlux, type Flux } from "../../support/flux.ts";
import { applyMirror, mirrorFieldManager } from "../../support/mirror.ts";
import { mirrorUser, startMirrorEnvironment, type MirrorEnvironment } from "../../support/mirrorenv.ts";
import { eventually } from "../../support/wait.ts";
import { grantEditing } from "../../support/attributionenv.ts";
import type { TestIdentity } from "../../support/controlplane.ts";

const namespace = "echo";
const branchKey = `${namespace}/main`;
/** Rounds of edit, push and apply: SOAK_ROUNDS (make soak: 50), else enough to show the rule. */
const rounds = Number(process.env.SOAK_ROUNDS ?? 6);
const settings = (mode: string, note = "none") =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: ${namespace}\n  labels:\n    app: apps\ndata:\n  mode: ${mode}\n  note: ${note}\n`;

/** The not-mirrored echoes the operator has counted so far. */
async function echoesCounted(): Promise<number> {
  const { values } = await applyEchoes.get();
  return values.filter((v) => v.labels.outcome === "not_mirrored").reduce((sum, v) => sum + v.value, 0);
}

describe("an apply's echoes, with the real Flux controllers", () => {
  let env: MirrorEnvironment;
  let flux: Flux;
  let kustomizations: ResourceClient<Kustomization>;
  let alice: TestIdentity;

  const tip = () => env.git.branchHead("state", "main");
  const operation = async (): Promise<ApplyOperation | undefined> =>
    (await fluxClaims(env.kc).get(namespace, "apps"))?.status?.operation;
  /** The claim's operation once it succeeded at the branch's tip, held suspended again. */
  const appliedAtTip = async () => {
    const [op, head, k] = await Promise.all([operation(), tip(), kustomizations.get(namespace, "apps")]);
    return op?.phase === "Succeeded" && op.commit === head && k?.spec?.suspend === true && op;
  };

  before(async () => {
    env = await startMirrorEnvironment([namespace], {}, { attributed: true });
    alice = await env.plane.mintUser("alice");
    await grantEditing(env.kc, namespace, [
      { kind: "User", name: "alice", apiGroup: "rbac.authorization.k8s.io" },
    ]);
    flux = await startFlux(env.plane);
    kustomizations = new ResourceClient<Kustomization>(env.kc, kustomizationType);
    await env.git.pushForeignCommit("state", {
      files: { "clusters/apps/settings.yaml": settings("start") },
      message: "The folder Flux applies",
    });
    await fluxSource(env, namespace, mirrorUser);
    await kustomizations.apply(kustomization(namespace, "apps", "./clusters/apps"), "kubectl");
    await eventually(
      async () =>
        (await env.core.readNamespacedConfigMap({ namespace, name: "settings" }).catch(() => undefined))?.data
          ?.mode === "start",
      { timeoutMs: 60_000, description: "Flux applied the folder" },
    );
    await applyMirror(env.kc, namespace, env.url, mirrorUser, [
      {
        name: "apps",
        path: "clusters/apps",
        rules: [
          { apiGroups: [""], resources: ["configmaps"], objectSelector: { matchLabels: { app: "apps" } } },
        ],
        applierClaimRef: { kind: "FluxClaim" as const, name: "apps" },
      },
    ]);
    await fluxClaims(env.kc).apply(fluxClaim(namespace, "apps"), mirrorFieldManager);
    await eventually(appliedAtTip, { timeoutMs: 90_000, description: "the converge at start" });
  });
  after(async () => {
    await flux?.stop();
    await env?.stop();
  });

  it(
    `an apply's echoes are not committed: ${rounds} applies of what Git holds, each between live edits`,
    // Fifty rounds take about three minutes here: the soak's budget leaves room for a loaded machine.
    { timeout: Math.max(300_000, rounds * 12_000) },
    async () => {
      const start = await tip();
      const echoesBefore = await echoesCounted();
      for (let round = 1; round <= rounds; round++) {
        await alice.kubeConfig.makeApiClient(CoreV1Api).patchNamespacedConfigMap({
          namespace,
          name: "settings",
          fieldManager: "kubectl-edit",
          body: [{ op: "replace", path: "/data/mode", value: `round-${round}` }],
        });
        await eventually(
          async () =>
            (await env.git.fileAt("state", "main", "clusters/apps/settings.yaml"))?.includes(
              `mode: round-${round}`,
            ),
          { timeoutMs: 30_000, description: `round ${round}: the edit in Git` },
        );
        // Somebody pushes another value of the same object: the claim applies it, an echo.
        await env.git.pushForeignCommit("state", {
          files: { "clusters/apps/settings.yaml": settings(`round-${round}`, `pushed-${round}`) },
          message: `Round ${round}`,
        });
        env.operator.workers.notice(branchKey);
        await eventually(appliedAtTip, { timeoutMs: 30_000, description: `round ${round}: applied` });
        const applied = await env.core.readNamespacedConfigMap({ namespace, name: "settings" });
        assert.deepEqual(applied.data, { mode: `round-${round}`, note: `pushed-${round}` }, `round ${round}`);
      }
      const authors = (await env.git.gitIn("state", ["log", "--format=%an|%s", `${start}..main`]))
        .trim()
        .split("\n");
      const ours = authors.filter((a) => !a.includes("|Round "));
      assert.equal(ours.length, rounds, `one commit per live edit, no more:\n${authors.join("\n")}`);
      // Flux's controllers write as the control plane's admin: an echo committed would name it.
      assert.deepEqual(
        ours.filter((a) => !a.startsWith("alice|")),
        [],
        "every live edit's commit is authored by alice, none by the apply",
      );
      const file = (await env.git.fileAt("state", "main", "clusters/apps/settings.yaml")) ?? "";
      assert.match(file, new RegExp(`mode: round-${rounds}\\n`));
      assert.match(file, new RegExp(`note: pushed-${rounds}\\n`));
      // Every apply wrote the object, and each write is judged the apply's echo once the watch
      // delivers it (with attribution on, after its audit fact: maybe after the apply ended).
      let judged = 0;
      let collisions = "";
      await eventually(
        async () => {
          collisions = JSON.stringify((await applyWindowCollisions.get()).values);
          return (judged = (await echoesCounted()) - echoesBefore) >= rounds;
        },
        {
          timeoutMs: 30_000,
          description: () => `every apply's echo judged: ${judged} of ${rounds}; collisions ${collisions}`,
        },
      );
    },
  );
});
