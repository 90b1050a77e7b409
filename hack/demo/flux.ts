// The demo's FluxClaim step, when the Flux controllers are built (make flux): Flux applies the
// demo's ConfigMaps folder from the repository the operator writes, and the GitTarget names a
// FluxClaim that holds that Kustomization suspended, so it applies only when the branch worker
// asks: a commit pushed by hand reaches the cluster through the claim, a live edit reaches Git,
// and neither reverts the other, nor does a commit pushed while the operator is down; a value
// kustomize cannot carry is not written, and the GitTarget says so until it is fixed.
import { EventsV1Api } from "@kubernetes/client-node";
import { fluxClaims, gitTargets } from "../../generated/v1alpha3/index.ts";
import { kustomizationType, type Kustomization } from "../../internal/applier/flux/view.ts";
import { ResourceClient } from "../../internal/kube/resourceclient.ts";
import type { ControlPlane } from "../../test/support/controlplane.ts";
import type { GitServer } from "../../test/support/gitserver.ts";
import { fluxClaim, fluxSource, kustomization, startFlux, type Flux } from "../../test/support/flux.ts";
import { mirrorFieldManager, mirrorGitTarget, type MirrorTarget } from "../../test/support/mirror.ts";
import type { MirrorEnvironment } from "../../test/support/mirrorenv.ts";
import { eventually } from "../../test/support/wait.ts";

/** Starts Flux, has it apply the folder, names a FluxClaim from `target`, and prints the hold. */
export async function demoFluxClaim(
  plane: ControlPlane,
  env: Pick<MirrorEnvironment, "kc" | "core" | "url">,
  namespace: string,
  target: MirrorTarget,
  user: { username: string; password: string },
  round: RoundTrip,
  print: (line: string) => void,
): Promise<Flux> {
  const flux = await startFlux(plane);
  const { kc } = env;
  // The source and its credential live in flux-system, as Flux installs them, so the mirrored
  // namespace holds only the Kustomization.
  await env.core.createNamespace({ body: { metadata: { name: "flux-system" } } });
  await fluxSource(env, "flux-system", user);
  const kustomizations = new ResourceClient<Kustomization>(kc, kustomizationType);
  const path = `./${target.path}/${namespace}/configmaps`;
  await kustomizations.apply(kustomization(namespace, "demo", path, "flux-system"), "kubectl");
  await eventually(async () => (await kustomizations.get(namespace, "demo"))?.status?.lastAppliedRevision, {
    timeoutMs: 60_000,
    description: "Flux to apply the folder once",
  });
  await fluxClaims(kc).apply(fluxClaim(namespace, "demo"), "demo");
  await gitTargets(kc).apply(
    mirrorGitTarget(namespace, { ...target, applierClaimRef: { kind: "FluxClaim", name: "demo" } }),
    mirrorFieldManager,
  );
  const claim = await eventually(
    async () => {
      const c = await fluxClaims(kc).get(namespace, "demo");
      return (
        c?.status?.conditions?.some(
          (x) => x.type === "Ready" && x.status === "True" && x.reason === "Suspended",
        ) && c
      );
    },
    { timeoutMs: 60_000, description: "the FluxClaim to hold its Kustomization" },
  );
  const reason = (type: string) => claim.status?.conditions?.find((c) => c.type === type);
  const held = await kustomizations.get(namespace, "demo");
  print(
    `    FluxClaim demo: Configured ${reason("Configured")?.reason}, InControl ${reason("InControl")?.reason}, Ready ${reason("Ready")?.status}`,
  );
  print(
    `    Kustomization demo: spec.suspend ${held?.spec?.suspend}, requestedAt handled ${held?.status?.lastHandledReconcileAt === held?.metadata?.annotations?.["reconcile.fluxcd.io/requestedAt"]}`,
  );
  print(
    `    source ${claim.status?.source?.url} branch ${claim.status?.source?.branch} at ${claim.status?.source?.revision}`,
  );
  const events = await kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace });
  const adopted = events.items.find((e) => e.regarding?.kind === "FluxClaim" && e.reason === "Adopted");
  print(`    Event ${adopted?.reason}: ${adopted?.note}`);
  const ready = await eventually(
    async () =>
      (await gitTargets(kc).get(namespace, target.name))?.status?.conditions?.find(
        (c) => c.type === "ApplierClaimReady" && c.status === "True",
      ),
    { timeoutMs: 30_000, description: "the GitTarget's ApplierClaimReady" },
  );
  print(`    GitTarget ${target.name}: ApplierClaimReady ${ready.status}: ${ready.message}`);
  await roundTrip(env, namespace, target, round, print);
  return flux;
}

/** What the round trip needs: the Git server, the repository, the push notice the receiver gives, and a restart. */
export interface RoundTrip {
  git: GitServer;
  repository: string;
  notice: () => void;
  /** Stops the operator, runs `whileDown`, and starts it again. */
  restart: (whileDown: () => Promise<void>) => Promise<void>;
}

/** A commit pushed by hand is applied through the claim; a live edit then reaches Git and stays. */
async function roundTrip(
  env: Pick<MirrorEnvironment, "kc" | "core">,
  namespace: string,
  target: MirrorTarget,
  round: RoundTrip,
  print: (line: string) => void,
): Promise<void> {
  const claims = fluxClaims(env.kc);
  const operation = async () => (await claims.get(namespace, "demo"))?.status?.operation;
  const show = (o: Awaited<ReturnType<typeof operation>>) =>
    `${o?.reason} ${o?.commit?.slice(0, 7)}: ${o?.phase} (${o?.message ?? ""})`;
  const converged = await eventually(
    async () => ((await operation())?.phase === "Succeeded" ? operation() : undefined),
    {
      timeoutMs: 60_000,
      description: "the converge at start",
    },
  );
  print(`    the worker's converge at start: ${show(converged)}`);
  const path = `${target.path}/${namespace}/configmaps/pushed-by-hand.yaml`;
  const pushed = await round.git.pushForeignCommit(round.repository, {
    files: {
      [path]: `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pushed-by-hand\n  namespace: ${namespace}\ndata:\n  color: blue\n`,
    },
    message: "A colleague adds a ConfigMap in Git",
    author: { name: "Colleague", email: "colleague@example.com" },
  });
  round.notice();
  const read = () =>
    env.core.readNamespacedConfigMap({ namespace, name: "pushed-by-hand" }).catch(() => undefined);
  await eventually(async () => (await read())?.data?.color === "blue", {
    timeoutMs: 60_000,
    description: "the pushed ConfigMap applied",
  });
  const applied = await eventually(
    async () => {
      const o = await operation();
      return o?.phase === "Succeeded" && o.commit === pushed && o;
    },
    { timeoutMs: 30_000, description: "the claim's operation for the pushed commit" },
  );
  print(`    pushed ${pushed.slice(0, 7)} by hand; the claim applied it: ${show(applied)}`);
  await env.core.patchNamespacedConfigMap({
    namespace,
    name: "pushed-by-hand",
    body: [{ op: "replace", path: "/data/color", value: "green" }],
  });
  await eventually(
    async () => (await round.git.fileAt(round.repository, "main", path))?.includes("color: green"),
    {
      timeoutMs: 30_000,
      description: "the live edit in Git",
    },
  );
  print(
    `    a live edit (color: green) is in Git at ${(await round.git.branchHead(round.repository, "main"))?.slice(0, 7)}, and the cluster keeps it: color ${(await read())?.data?.color}`,
  );
  // The restart three-way rule: a commit pushed while the operator is down stays where nobody
  // edited the object live, and the converge at start applies it (docs/flux.md).
  let whileDown = "";
  await round.restart(async () => {
    whileDown = await round.git.pushForeignCommit(round.repository, {
      files: {
        [path]: `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pushed-by-hand\n  namespace: ${namespace}\ndata:\n  color: purple\n`,
      },
      message: "A colleague changes the color while the operator is down",
      author: { name: "Colleague", email: "colleague@example.com" },
    });
  });
  await eventually(async () => (await read())?.data?.color === "purple", {
    timeoutMs: 90_000,
    description: "the commit pushed while the operator was down, applied at start",
  });
  print(
    `    the operator stopped; ${whileDown.slice(0, 7)} (color: purple) was pushed meanwhile; nobody edited the ConfigMap live, so at start its first snapshot kept the push and the converge applied it: color ${(await read())?.data?.color}, and Git still says ${(await round.git.fileAt(round.repository, "main", path))?.match(/color: (\w+)/)?.[1]}`,
  );
  await unrepresentable(env, namespace, target, round, path, print);
}

/**
 * A value kustomize cannot carry (docs/sanitize.md): Flux builds the folder with kustomize, which
 * would apply NEL as a space, so the object is not written and the GitTarget says why; once the
 * value is one kustomize carries, it is written and the condition clears.
 */
async function unrepresentable(
  env: Pick<MirrorEnvironment, "kc" | "core">,
  namespace: string,
  target: MirrorTarget,
  round: RoundTrip,
  path: string,
  print: (line: string) => void,
): Promise<void> {
  const edit = (value: string) =>
    env.core.patchNamespacedConfigMap({
      namespace,
      name: "pushed-by-hand",
      body: [{ op: "add", path: "/data/note", value }],
    });
  const accepted = (reason: string) =>
    eventually(
      async () =>
        (await gitTargets(env.kc).get(namespace, target.name))?.status?.conditions?.find(
          (c) => c.type === "GitPathAccepted" && c.reason === reason,
        ),
      { timeoutMs: 60_000, description: `GitPathAccepted ${reason}` },
    );
  await edit("one\u0085two");
  const refused = await accepted("ValueNotRepresentable");
  print(
    `    a live edit sets data.note to "one<NEL>two": not written; GitPathAccepted ${refused.status} ${refused.reason}: ${refused.message}`,
  );
  await edit("one two");
  await eventually(
    async () => (await round.git.fileAt(round.repository, "main", path))?.includes("note: one two"),
    { timeoutMs: 30_000, description: "the fixed value in Git" },
  );
  const again = await accepted("Succeeded");
  print(`    data.note set to "one two": written, GitPathAccepted ${again.status} ${again.reason}`);
}
