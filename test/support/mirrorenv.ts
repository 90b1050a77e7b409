// What most end-to-end tests of the operator start with: a control plane with the CRDs, a Git
// server with one repository whose default branch exists, namespaces, and the operator wired as
// main.ts wires it, allowed to use each namespace's in-cluster KubeProvider "self".
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import type { OperatorSettings } from "../../controllers/setup.ts";
import { ControlPlane } from "./controlplane.ts";
import { GitServer } from "./gitserver.ts";
import { installCrds } from "./manifests.ts";
import { startOperator, type RunningOperator } from "./operator.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "./reaper.ts";

export const mirrorUser = { username: "gitops", password: "s3cret" };

export interface MirrorEnvironment {
  plane: ControlPlane;
  git: GitServer;
  kc: KubeConfig;
  core: CoreV1Api;
  operator: RunningOperator & { errors: string[] };
  /** The repository "state", with a main branch holding a README. */
  url: string;
  stop(): Promise<void>;
}

export async function startMirrorEnvironment(
  namespaces: string[],
  settings: Partial<OperatorSettings> = {},
): Promise<MirrorEnvironment> {
  const [plane, git] = await Promise.all([ControlPlane.start(), GitServer.start({ users: [mirrorUser] })]);
  const workerRoot = makeOwnedTempDir("workers");
  const stopAll = async () => {
    await git.close();
    await plane.stop();
    removeOwnedTempDir(workerRoot);
  };
  try {
    const kc = plane.kubeConfig();
    const core = kc.makeApiClient(CoreV1Api);
    await installCrds(kc);
    for (const name of namespaces) await core.createNamespace({ body: { metadata: { name } } });
    const url = await git.createRepository("state");
    // The default branch exists, as it does on every hosted repository.
    await git.pushForeignCommit("state", { files: { "README.md": "# State\n" }, message: "Start" });
    const operator = startOperator(kc, {
      inClusterKubeProviders: namespaces.map((ns) => `${ns}/self`),
      workerRoot,
      pushCooldownMs: 0,
      ...settings,
    });
    return {
      plane,
      git,
      kc,
      core,
      operator,
      url,
      async stop() {
        await operator.stop();
        await stopAll();
      },
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
