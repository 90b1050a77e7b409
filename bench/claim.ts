// (h) An applier claim in place, per kind, each on a namespace of ConfigMaps mirrored into a
// folder of a repository of its own and held by the claim, with an operator of its own:
//  - a WebhookClaim naming the small real webhook applier of the tests and the demo
//    (test/support/webhookapplier.ts: it takes the operator's signed POST, fetches the commit,
//    runs `kubectl apply --server-side` of the folder under its own field manager and reports by
//    a signed callback to the operator's receiver). It needs no Flux, so it always runs.
//  - a FluxClaim with the real Flux controllers (when `make flux` built them): a Kustomization
//    applies the folder.
// Measured per round: from a push notice of a commit pushed by hand to the pushed commit applied
// (for the WebhookClaim, the cluster object showing the pushed value, and the applier's callback
// answered; for the FluxClaim, the Kustomization Ready at that revision: the worker's fetch, the
// source's fetch, the resume, Flux's apply, the suspend after it), and from a live edit to the
// push that carries it (nothing to apply: the cluster runs it).
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { fluxClaims, webhookClaims, type WebhookClaim } from "../generated/v1alpha3/index.ts";
import { kustomizationType, type Kustomization } from "../internal/applier/flux/view.ts";
import { ResourceClient } from "../internal/kube/resourceclient.ts";
import type { ControlPlane } from "../test/support/controlplane.ts";
import { fluxBuilt, fluxClaim, fluxSource, kustomization, startFlux } from "../test/support/flux.ts";
import type { GitServer } from "../test/support/gitserver.ts";
import { applyMirror } from "../test/support/mirror.ts";
import { startOperator } from "../test/support/operator.ts";
import { eventually } from "../test/support/wait.ts";
import { WebhookApplier } from "../test/support/webhookapplier.ts";
import { configMapFolder, configMapName, fillNamespace, targetPath } from "./cluster.ts";
import { progress } from "./sampler.ts";

/** One claim kind's rounds. */
export interface ClaimRounds {
  /**
   * ms from the push notice to the pushed commit applied, per round: for a FluxClaim the
   * Kustomization Ready at the pushed revision, for a WebhookClaim the cluster object showing the
   * pushed value.
   */
  pushToApplied: number[];
  /**
   * WebhookClaim only: ms from the push notice to the applier's callback answered 200 (the
   * operation recorded Succeeded), per round whose request named the pushed commit.
   */
  pushToReported?: number[];
  /** ms from a live edit to the push that carries it, per round. */
  editToCommit: number[];
  operatorErrors: string[];
  /** WebhookClaim only: what went wrong in the applier (fetch, kubectl, callback). */
  applierErrors?: string[];
}

export interface ClaimResult {
  objects: number;
  /** A WebhookClaim naming the test's webhook applier. */
  webhook?: ClaimRounds;
  /** A FluxClaim with the real Flux controllers. */
  flux?: ClaimRounds;
  /** Why the FluxClaim part did not run. */
  fluxSkipped?: string;
}

export interface ClaimOptions {
  objects: number;
  rounds: number;
  batch: number;
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
};

export function claimSummary(r: ClaimResult): string {
  const show = (values: number[]) =>
    values.length === 0
      ? "— (0 rounds)"
      : `p50 ${percentile(values, 50)} ms, max ${Math.max(...values)} ms (${values.length} rounds)`;
  const edit = "live edit → its push, with the claim in place (idleTimeout 0s)";
  const lines: string[] = [];
  if (r.flux)
    lines.push(
      `(h) FluxClaim, ${r.objects} ConfigMaps in the applied folder:`,
      `    push notice → Kustomization Ready at the pushed revision: ${show(r.flux.pushToApplied)}`,
      `    ${edit}: ${show(r.flux.editToCommit)}`,
    );
  else if (r.fluxSkipped) lines.push(`(h) FluxClaim: skipped: ${r.fluxSkipped}`);
  if (r.webhook)
    lines.push(
      `(h) WebhookClaim, ${r.objects} ConfigMaps in the applied folder (the tests' webhook applier, kubectl apply --server-side, completion Callback):`,
      `    push notice → applied (the last ConfigMap kubectl applies shows the pushed value): ${show(r.webhook.pushToApplied)}`,
      `    push notice → the applier's callback answered (operation Succeeded): ${show(r.webhook.pushToReported ?? [])}`,
      `    ${edit}: ${show(r.webhook.editToCommit)}`,
    );
  return lines.join("\n");
}

/**
 * Runs (h) into `into`, filled in as it runs so a failure still reports what was measured: the
 * WebhookClaim, then the FluxClaim when the Flux controllers are built.
 */
export async function measureClaim(
  plane: ControlPlane,
  kc: KubeConfig,
  git: GitServer,
  user: { username: string; password: string },
  workerRoot: string,
  options: ClaimOptions,
  into: ClaimResult,
): Promise<void> {
  await measureWebhookClaim(plane, kc, git, user, workerRoot, options, into);
  if (fluxBuilt()) await measureFluxClaim(plane, kc, git, user, workerRoot, options, into);
  else {
    into.fluxSkipped = "the Flux controllers are not built (make flux builds them)";
    progress(`(h) FluxClaim skipped: ${into.fluxSkipped}`);
  }
}

const emptyRounds = (): ClaimRounds => ({ pushToApplied: [], editToCommit: [], operatorErrors: [] });

interface RoundsContext {
  git: GitServer;
  core: CoreV1Api;
  repository: string;
  namespace: string;
  folder: string;
  rounds: number;
  /** The ConfigMap whose file each round's pushed commit edits. */
  pushed: string;
  /** The push notice, as the receiver gives one. */
  notice: () => void;
  /** Whether the pushed commit, which sets `pushed`'s alpha to `value`, is applied. */
  applied: (commit: string, value: string) => Promise<boolean>;
  /** After each round, with the pushed commit and when its push notice was given. */
  afterRound?: (commit: string, noticed: number) => void;
  into: ClaimRounds;
}

/** The rounds: a commit pushed by hand and its push notice, to applied; then a live edit, to its push. */
async function measureRounds(c: RoundsContext): Promise<void> {
  const file = `${c.folder}/${c.pushed}.yaml`;
  const edited = `${c.folder}/${configMapName(1)}.yaml`;
  for (let round = 0; round < c.rounds; round++) {
    const text = (await c.git.fileAt(c.repository, "main", file))!;
    const value = `pushed-${round}`;
    const commit = await c.git.pushForeignCommit(c.repository, {
      files: { [file]: text.replace(/alpha: .*/, `alpha: ${value}`) },
      message: `round ${round}`,
    });
    const noticed = Date.now();
    c.notice();
    await eventually(() => c.applied(commit, value), {
      timeoutMs: 120_000,
      intervalMs: 20,
      description: `round ${round} applied`,
    });
    c.into.pushToApplied.push(Date.now() - noticed);
    const live = `live-${round}`;
    const edit = Date.now();
    await c.core.patchNamespacedConfigMap({
      namespace: c.namespace,
      name: configMapName(1),
      body: [{ op: "replace", path: "/data/alpha", value: live }],
    });
    await eventually(
      async () => (await c.git.fileAt(c.repository, "main", edited))?.includes(`alpha: ${live}`),
      { timeoutMs: 60_000, intervalMs: 20, description: `round ${round}'s edit in Git` },
    );
    c.into.editToCommit.push(Date.now() - edit);
    c.afterRound?.(commit, noticed);
  }
}

async function measureWebhookClaim(
  plane: ControlPlane,
  kc: KubeConfig,
  git: GitServer,
  user: { username: string; password: string },
  workerRoot: string,
  options: ClaimOptions,
  into: ClaimResult,
): Promise<void> {
  const namespace = "bench-webhook-claim";
  const repository = "bench-webhook-claim";
  progress(`(h) a WebhookClaim with the tests' webhook applier (kubectl), ${options.objects} ConfigMaps`);
  const result: ClaimRounds = { ...emptyRounds(), pushToReported: [], applierErrors: [] };
  into.webhook = result;
  await fillNamespace(kc, namespace, options.objects, options.batch);
  const url = await git.createRepository(repository);
  await git.pushForeignCommit(repository, { files: { "README.md": "# Claim\n" }, message: "Start" });
  // The applier reads the repository as a Git user of its own.
  const deployer = { username: "bench-deployer", password: "bench-deployer-password" };
  git.addUser({ ...deployer, access: "read" });
  const folder = configMapFolder(namespace);
  const token = "bench-deployer-token";
  const core = kc.makeApiClient(CoreV1Api);
  let operator: ReturnType<typeof startOperator> | undefined;
  const applier = await WebhookApplier.start({
    token,
    plane,
    kubeConfig: kc,
    gitUser: deployer,
    folder,
    // The operator's receiver, where the applier's callback goes.
    receiverUrl: () => {
      const address = operator?.receiver?.address;
      return address && `http://${address.host}:${address.port}`;
    },
  });
  try {
    operator = startOperator(kc, {
      inClusterKubeProviders: [`${namespace}/self`],
      workerRoot,
      pushCooldownMs: 0,
      receiverBindAddress: "127.0.0.1:0",
      webhookClaimAllowLoopbackHttp: true,
    });
    const running = operator;
    await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: "deployer-hook" }, stringData: { token } },
    });
    const claim: WebhookClaim = {
      apiVersion: "configbutler.ai/v1alpha3",
      kind: "WebhookClaim",
      metadata: { name: "bench", namespace },
      spec: {
        url: applier.url,
        secretRef: { name: "deployer-hook" },
        fieldManagers: [applier.fieldManager],
        completion: { mode: "Callback" },
      },
    };
    await webhookClaims(kc).apply(claim, "bench");
    await applyMirror(kc, namespace, url, user, [
      {
        name: "bench",
        path: targetPath,
        rules: [{ apiGroups: [""], resources: ["configmaps"] }],
        idleTimeout: "0s",
        applierClaimRef: { kind: "WebhookClaim", name: "bench" },
      },
    ]);
    await eventually(
      async () => (await git.listFiles(repository, "main", folder)).length >= options.objects,
      { timeoutMs: 240_000, description: "the snapshot in Git" },
    );
    const tip = async () => (await git.branchHead(repository, "main"))!;
    // The converge at start: the applier is asked for the tip once the snapshot is in Git.
    await eventually(
      async () => {
        const [operation, head] = await Promise.all([
          webhookClaims(kc)
            .get(namespace, "bench")
            .then((c) => c?.status?.operation),
          tip(),
        ]);
        return operation?.phase === "Succeeded" && operation.commit === head;
      },
      {
        timeoutMs: 240_000,
        description: () => `the converge at start; applier errors: ${applier.errors.join("; ")}`,
      },
    );
    // kubectl applies the folder's files in order: the last one shows the pushed value once the
    // whole folder is applied, as a Kustomization is Ready.
    const pushed = configMapName(options.objects - 1);
    await measureRounds({
      git,
      core,
      repository,
      namespace,
      folder,
      rounds: options.rounds,
      pushed,
      notice: () => running.workers.notice(`${namespace}/main`),
      applied: async (_commit, value) =>
        (await core.readNamespacedConfigMap({ namespace, name: pushed })).data?.alpha === value,
      afterRound: (commit, noticed) => {
        const tokens = new Set(applier.requestsFor(commit).map((r) => r.apply?.token));
        const report = applier.reports.find((r) => tokens.has(r.token) && r.status === 200);
        if (report) result.pushToReported!.push(report.at - noticed);
      },
      into: result,
    });
  } finally {
    result.operatorErrors = operator?.errors.slice(0, 20) ?? [];
    result.applierErrors = applier.errors.slice(0, 20);
    await operator?.stop();
    await applier.close();
  }
}

async function measureFluxClaim(
  plane: ControlPlane,
  kc: KubeConfig,
  git: GitServer,
  user: { username: string; password: string },
  workerRoot: string,
  options: ClaimOptions,
  into: ClaimResult,
): Promise<void> {
  const namespace = "bench-claim";
  progress(`(h) a FluxClaim with the real Flux controllers, ${options.objects} ConfigMaps`);
  const result = emptyRounds();
  into.flux = result;
  await fillNamespace(kc, namespace, options.objects, options.batch);
  const url = await git.createRepository("bench-claim");
  await git.pushForeignCommit("bench-claim", { files: { "README.md": "# Claim\n" }, message: "Start" });
  const flux = await startFlux(plane);
  const core = kc.makeApiClient(CoreV1Api);
  const env = { kc, core, url };
  const operator = startOperator(kc, {
    inClusterKubeProviders: [`${namespace}/self`],
    workerRoot,
    pushCooldownMs: 0,
  });
  try {
    await applyMirror(kc, namespace, url, user, [
      {
        name: "bench",
        path: targetPath,
        rules: [{ apiGroups: [""], resources: ["configmaps"] }],
        idleTimeout: "0s",
        applierClaimRef: { kind: "FluxClaim", name: "bench" },
      },
    ]);
    const folder = configMapFolder(namespace);
    await eventually(
      async () => (await git.listFiles("bench-claim", "main", folder)).length >= options.objects,
      {
        timeoutMs: 240_000,
        description: "the snapshot in Git",
      },
    );
    await fluxSource(env, namespace, user);
    const kustomizations = new ResourceClient<Kustomization>(kc, kustomizationType);
    await kustomizations.apply(kustomization(namespace, "bench", `./${folder}`), "kubectl");
    await fluxClaims(kc).apply(fluxClaim(namespace, "bench"), "bench");
    const applied = async (commit: string) => {
      const k = await kustomizations.get(namespace, "bench");
      const ready = k?.status?.conditions?.find((c) => c.type === "Ready");
      return ready?.status === "True" && (k?.status?.lastAppliedRevision?.endsWith(commit) ?? false);
    };
    const tip = async () => (await git.branchHead("bench-claim", "main"))!;
    await eventually(async () => applied(await tip()), {
      timeoutMs: 240_000,
      description: "the converge at start",
    });
    await measureRounds({
      git,
      core,
      repository: "bench-claim",
      namespace,
      folder,
      rounds: options.rounds,
      pushed: configMapName(0),
      notice: () => operator.workers.notice(`${namespace}/main`),
      applied: (commit) => applied(commit),
      into: result,
    });
  } finally {
    result.operatorErrors = operator.errors.slice(0, 20);
    await operator.stop();
    await flux.stop();
  }
}
