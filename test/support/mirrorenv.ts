// What most end-to-end tests of the operator start with: a control plane with the CRDs, a Git
// server with one repository whose default branch exists, namespaces, and the operator wired as
// main.ts wires it, allowed to use each namespace's in-cluster KubeProvider "self". The operator
// runs as a user installs it: its ServiceAccount, bound to config/rbac's roles (shippedrbac.ts).
import { CoreV1Api, type KubeConfig, type V1PolicyRule } from "@kubernetes/client-node";
import type { OperatorSettings } from "../../controllers/settings.ts";
import { attributionEnv } from "./attributionenv.ts";
import { ControlPlane } from "./controlplane.ts";
import { GitServer, type GitServerTls } from "./gitserver.ts";
import { installCrds } from "./manifests.ts";
import { applyMirror, type MirrorTarget } from "./mirror.ts";
import { startOperator, type RunningOperator } from "./operator.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "./reaper.ts";
import { shippedOperatorIdentity } from "./shippedrbac.ts";
import { eventually } from "./wait.ts";

export const mirrorUser = { username: "gitops", password: "s3cret" };

/** Shutdown publishes for at most 20 s per worker; past this the operator is stuck. */
const operatorStopMs = 90_000;

export interface MirrorEnvironment {
  plane: ControlPlane;
  git: GitServer;
  kc: KubeConfig;
  /** Who the operator is: its ServiceAccount under config/rbac's roles (shippedrbac.ts). */
  operatorKc: KubeConfig;
  core: CoreV1Api;
  operator: RunningOperator & { errors: string[]; logs: string[] };
  /**
   * What the operator was started with, its attribution among them, but its clone folder: what a
   * test that restarts the operator starts the next one with.
   */
  operatorSettings: Partial<OperatorSettings>;
  /** The repository "state", with a main branch holding a README. */
  url: string;
  stop(): Promise<void>;
}

export interface MirrorOptions {
  /** Serves the repository over HTTPS instead of HTTP. */
  gitTls?: GitServerTls;
  /**
   * Attribution on, as production runs it: the control plane audits to the operator's ingress
   * (the first namespace's KubeProvider "self" route), so each commit is authored by who wrote.
   */
  attributed?: boolean;
  /**
   * What the operator's ServiceAccount may do with what it mirrors, as a user's ClusterRole
   * labelled to aggregate into gitops-reverser-watched grants it: get, list and watch of every
   * kind unless a suite says otherwise (docs/rbac.md).
   */
  watched?: V1PolicyRule[];
}

export async function startMirrorEnvironment(
  namespaces: string[],
  settings: Partial<OperatorSettings> = {},
  { gitTls, attributed = false, watched }: MirrorOptions = {},
): Promise<MirrorEnvironment> {
  const auditDir = attributed ? makeOwnedTempDir("audit") : undefined;
  const audit = auditDir ? await attributionEnv(auditDir) : undefined;
  // Started together; if one fails, the other is stopped, so nothing keeps the test process alive.
  const [planeStart, gitStart] = await Promise.allSettled([
    ControlPlane.start(audit ? { audit: audit.webhook(`${namespaces[0]}.self`) } : {}),
    GitServer.start({ users: [mirrorUser], ...(gitTls ? { tls: gitTls } : {}) }),
  ]);
  if (planeStart.status === "rejected" || gitStart.status === "rejected") {
    if (planeStart.status === "fulfilled") await planeStart.value.stop();
    if (gitStart.status === "fulfilled") await gitStart.value.close();
    if (auditDir) removeOwnedTempDir(auditDir);
    throw planeStart.status === "rejected" ? planeStart.reason : (gitStart as PromiseRejectedResult).reason;
  }
  const [plane, git] = [planeStart.value, gitStart.value];
  const workerRoot = makeOwnedTempDir("workers");
  const stopAll = async () => {
    await git.close();
    await plane.stop();
    removeOwnedTempDir(workerRoot);
    if (auditDir) removeOwnedTempDir(auditDir);
  };
  try {
    const kc = plane.kubeConfig();
    const core = kc.makeApiClient(CoreV1Api);
    await installCrds(kc);
    for (const name of namespaces) await core.createNamespace({ body: { metadata: { name } } });
    const url = await git.createRepository("state");
    // The default branch exists, as it does on every hosted repository.
    await git.pushForeignCommit("state", { files: { "README.md": "# State\n" }, message: "Start" });
    const { workerRoot: givenRoot, ...given } = settings;
    const operatorSettings: Partial<OperatorSettings> = {
      inClusterKubeProviders: namespaces.map((ns) => `${ns}/self`),
      pushCooldownMs: 0,
      ...(audit ? { attribution: audit.settings() } : {}),
      ...given,
    };
    const operatorKc = (await shippedOperatorIdentity(plane, kc, watched)).kubeConfig;
    const operator = startOperator(operatorKc, { workerRoot: givenRoot ?? workerRoot, ...operatorSettings });
    return {
      plane,
      git,
      kc,
      operatorKc,
      core,
      operator,
      operatorSettings,
      url,
      async stop() {
        // The harness stops even when the operator does not: a hung shutdown fails the suite
        // loudly instead of leaving a control plane behind a test process that never exits.
        const stopped = await Promise.race([
          operator.stop().then(() => true),
          new Promise<false>((resolve) => setTimeout(() => resolve(false), operatorStopMs).unref()),
        ]).finally(stopAll);
        if (!stopped) throw new Error(`the operator did not stop within ${operatorStopMs / 1000} s`);
      },
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

/**
 * What the folder tests do on the environment's repository, where each scenario writes its own
 * branch: read a file or the tip, wait for a file or for the branch to settle, and seed a folder
 * by hand before mirroring the namespace into it.
 */
export function folderBranches(env: MirrorEnvironment) {
  const show = (branch: string, path: string) => env.git.fileAt("state", branch, path);
  const head = (branch: string) => env.git.branchHead("state", branch);
  return {
    show,
    head,
    inGit: (branch: string, path: string, test: (content: string) => boolean, description: string) =>
      eventually(
        async () => {
          const content = await show(branch, path);
          return content !== undefined && test(content) && content;
        },
        { timeoutMs: 60_000, description },
      ),
    /** The branch's tip once it has stopped moving for the length of one commit window and more. */
    settled: async (branch: string) => {
      let last = await head(branch);
      let since = Date.now();
      return eventually(
        async () => {
          const now = await head(branch);
          if (now !== last) [last, since] = [now, Date.now()];
          return Date.now() - since > 3_000 && now;
        },
        { timeoutMs: 60_000, description: `branch ${branch} to settle` },
      );
    },
    /** Pushes the folder as its author would, then mirrors the namespace into it; returns that commit. */
    seed: async (branch: string, files: Record<string, string>, target: Omit<MirrorTarget, "name">) => {
      await env.git.pushForeignCommit("state", {
        branch,
        startFrom: "main",
        files,
        message: `The ${branch} folder, by hand`,
      });
      const seeded = await head(branch);
      await applyMirror(env.kc, branch, env.url, mirrorUser, [{ name: branch, ...target }], branch);
      return seeded;
    },
  };
}
export type FolderBranches = ReturnType<typeof folderBranches>;
