// The real Flux source-controller and kustomize-controller, built from Go modules by
// hack/tools/flux.sh, run out of cluster against a test ControlPlane as its admin. They apply
// what sits in Git the way a cluster's Flux would, so tests see the operator's commits land.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { readdir } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import type { KubeConfig, KubernetesObject } from "@kubernetes/client-node";
import type { GitRepository, Kustomization } from "../../internal/applier/flux/view.ts";
import type { MirrorEnvironment } from "./mirrorenv.ts";
import {
  gitRepositoryType,
  kustomizationType,
  requestedAtAnnotation as reconcileRequestAnnotation,
} from "../../internal/applier/flux/view.ts";
import { ResourceClient } from "../../internal/kube/resourceclient.ts";
import { repoRoot } from "./binaries.ts";
import type { ControlPlane } from "./controlplane.ts";
import { keepCopy } from "./keeplogs.ts";
import { installCrdFiles } from "./manifests.ts";
import { freePort, startOnChosenPorts } from "./ports.ts";
import { ManagedProcess } from "./process.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "./reaper.ts";
import { eventually } from "./wait.ts";
import type { FluxClaim } from "../../generated/v1alpha3/index.ts";

export type FluxTool = "source-controller" | "kustomize-controller";

// The operator's own readings of Flux's kinds, so a test and the FluxClaim agree on them.
export {
  gitRepositoryType,
  kustomizationType,
  requestedAtAnnotation as reconcileRequestAnnotation,
} from "../../internal/applier/flux/view.ts";

const overrides: Record<FluxTool, string> = {
  "source-controller": "FLUX_SOURCE_CONTROLLER_PATH",
  "kustomize-controller": "FLUX_KUSTOMIZE_CONTROLLER_PATH",
};
const located = new Map<FluxTool, string>();

/**
 * The pinned controller built by `make flux`. Its CRDs sit in crds/ beside it, copied from the
 * same module. FLUX_SOURCE_CONTROLLER_PATH / FLUX_KUSTOMIZE_CONTROLLER_PATH name another binary
 * (with its own crds/ beside it).
 */
export function fluxBinary(tool: FluxTool): string {
  let path = located.get(tool);
  if (!path) {
    path =
      process.env[overrides[tool]] ??
      execFileSync("bash", [join(repoRoot, "hack/tools/flux.sh"), tool, "--print-path"], {
        encoding: "utf8",
      }).trim();
    located.set(tool, path);
  }
  if (!existsSync(path)) throw new Error(`${tool} is missing (${path}): run \`make flux\` first`);
  return path;
}

/** Whether `make flux` built both controllers. */
export function fluxBuilt(): boolean {
  try {
    fluxBinary("source-controller");
    fluxBinary("kustomize-controller");
    return true;
  } catch {
    return false;
  }
}

/** The CRD files of the module the binary was built from. */
export async function fluxCrdFiles(tool: FluxTool): Promise<string[]> {
  const dir = join(dirname(fluxBinary(tool)), "crds");
  return (await readdir(dir))
    .filter((f) => f.endsWith(".yaml"))
    .sort()
    .map((f) => join(dir, f));
}

export interface FluxOptions {
  /** RUNTIME_NAMESPACE, which the controllers name as their own; it need not exist. Default flux-system. */
  runtimeNamespace?: string;
  /** Both controllers' --log-level. Default info. */
  logLevel?: "trace" | "debug" | "info" | "error";
  /**
   * kustomize-controller's --requeue-dependency: how soon a Kustomization whose source has no
   * artifact yet looks again. Flux's 30s default would dominate a test. Default 2s.
   */
  requeueDependency?: string;
  /** How long to wait for both controllers to be ready. Default 60s. */
  readyTimeoutMs?: number;
}

export interface Flux {
  dir: string;
  /** `http://127.0.0.1:<port>`: source-controller's artifact server, which kustomize-controller fetches from. */
  storageUrl: string;
  crds: string[];
  sourceController: ManagedProcess;
  kustomizeController: ManagedProcess;
  gitRepositories(kubeConfig: KubeConfig): ResourceClient<FluxObject>;
  kustomizations(kubeConfig: KubeConfig): ResourceClient<FluxObject>;
  /** Kills exactly the two controllers this started and removes their directory. */
  stop(): Promise<void>;
}

export type FluxObject = KubernetesObject & {
  spec?: Record<string, unknown>;
  status?: {
    observedGeneration?: number;
    lastHandledReconcileAt?: string;
    /** GitRepository: the artifact source-controller serves, revision `<branch>@sha1:<commit>`. */
    artifact?: { revision?: string; url?: string; digest?: string };
    /** Kustomization: the source revision last applied, and last tried. */
    lastAppliedRevision?: string;
    lastAttemptedRevision?: string;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
  };
};

/**
 * Installs the controllers' CRDs into the plane, starts both on free loopback ports, and waits
 * until their readiness endpoints answer and the artifact server accepts requests.
 */
export function startFlux(plane: ControlPlane, options: FluxOptions = {}): Promise<Flux> {
  // A controller that exits while it starts has most often lost a port (its last log lines may
  // not show the bind error): any exit is taken for one.
  return startOnChosenPorts(
    () => startFluxOnce(plane, options),
    (err) => /exited/.test(String(err)),
  );
}

async function startFluxOnce(plane: ControlPlane, options: FluxOptions): Promise<Flux> {
  const kubeConfig = plane.kubeConfig();
  const crds = await installCrdFiles(kubeConfig, [
    ...(await fluxCrdFiles("source-controller")),
    ...(await fluxCrdFiles("kustomize-controller")),
  ]);
  const dir = makeOwnedTempDir("flux");
  const started: ManagedProcess[] = [];
  try {
    // Neither controller has a --kubeconfig flag (controller-runtime registers it on Go's flag
    // set, which Flux's pflag parsing leaves out), so KUBECONFIG names the plane's admin.
    const env = {
      ...process.env,
      KUBECONFIG: plane.kubeconfigPath,
      RUNTIME_NAMESPACE: options.runtimeNamespace ?? "flux-system",
    };
    const logLevel = options.logLevel ?? "info";
    const common = async () => {
      const health = await freePort();
      const args = [
        `--metrics-addr=127.0.0.1:${await freePort()}`,
        `--health-addr=127.0.0.1:${health}`,
        // One replica: no Lease to wait for, none left behind in the plane.
        "--enable-leader-election=false",
        "--watch-all-namespaces=true",
        // No notification-controller: events go to the API server only.
        "--events-addr=",
        `--log-level=${logLevel}`,
      ];
      return { health, args };
    };

    // source-controller refuses to start on a storage path that does not exist yet.
    const storage = join(dir, "storage");
    mkdirSync(storage);
    const storagePort = await freePort();
    const storageUrl = `http://127.0.0.1:${storagePort}`;
    const source = await common();
    const sourceController = ManagedProcess.start({
      name: "source-controller",
      command: fluxBinary("source-controller"),
      args: [
        ...source.args,
        `--storage-path=${storage}`,
        `--storage-addr=127.0.0.1:${storagePort}`,
        // What goes into each artifact's URL: kustomize-controller runs here too, so loopback.
        `--storage-adv-addr=127.0.0.1:${storagePort}`,
      ],
      logFile: join(dir, "source-controller.log"),
      env,
    });
    started.push(sourceController);

    const kustomize = await common();
    const kustomizeController = ManagedProcess.start({
      name: "kustomize-controller",
      command: fluxBinary("kustomize-controller"),
      args: [
        ...kustomize.args,
        // Everything a Kustomization builds comes from the artifact; nothing from the network.
        "--no-remote-bases=true",
        `--requeue-dependency=${options.requeueDependency ?? "2s"}`,
        // No --default-service-account: with Kustomizations that name no serviceAccountName,
        // the controller applies as itself (the plane's admin) and impersonates nobody.
      ],
      logFile: join(dir, "kustomize-controller.log"),
      env,
    });
    started.push(kustomizeController);

    const timeoutMs = options.readyTimeoutMs ?? 60_000;
    await Promise.all([
      ready(sourceController, `http://127.0.0.1:${source.health}/readyz`, timeoutMs),
      ready(kustomizeController, `http://127.0.0.1:${kustomize.health}/readyz`, timeoutMs),
      // The artifact server starts once the manager runs; any HTTP answer (a 404 for /) means it listens.
      ready(sourceController, `${storageUrl}/`, timeoutMs, () => true),
    ]);

    return {
      dir,
      storageUrl,
      crds,
      sourceController,
      kustomizeController,
      gitRepositories: (kc) => new ResourceClient<FluxObject>(kc, gitRepositoryType),
      kustomizations: (kc) => new ResourceClient<FluxObject>(kc, kustomizationType),
      stop: async () => {
        await Promise.all(started.map((p) => p.stop()));
        // Both controllers' logs, to read after a failure (KEEP_TEST_LOGS).
        keepCopy(basename(dir), dir, ".", (src) => !src.includes("storage"));
        removeOwnedTempDir(dir);
      },
    };
  } catch (err) {
    await Promise.all(started.map((p) => p.stop()));
    removeOwnedTempDir(dir);
    throw err;
  }
}

/**
 * Waits until `url` answers (200, unless `accept` says otherwise), failing fast if the process
 * exits. Also how fluxnotification.ts waits for notification-controller.
 */
export async function ready(
  controller: ManagedProcess,
  url: string,
  timeoutMs: number,
  accept: (status: number) => boolean = (status) => status === 200,
): Promise<void> {
  await eventually(
    async () => {
      controller.assertRunning();
      const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      await response.body?.cancel();
      return accept(response.status);
    },
    { timeoutMs, intervalMs: 200, description: `${controller.options.name} at ${url}` },
  );
}

let reconcileRequests = 0;

/**
 * Asks a controller to reconcile an object now, as `flux reconcile` does: sets the request
 * annotation to a fresh token (under a field manager of its own, so no other field changes
 * hands) and returns the token, which status.lastHandledReconcileAt shows once handled.
 */
export async function requestReconcile(
  client: ResourceClient<FluxObject>,
  namespace: string,
  name: string,
): Promise<string> {
  // A timestamp, as the flux CLI writes, made unique by a counter: two requests in the same
  // millisecond must still differ, or the second would read as already handled.
  const token = `${new Date().toISOString()}-${++reconcileRequests}`;
  await client.apply(
    { metadata: { name, namespace, annotations: { [reconcileRequestAnnotation]: token } } },
    "flux-reconcile-request",
    true,
  );
  return token;
}

// What a Flux user has in place before a GitTarget names a claim: a GitRepository fetching the
// repository's main branch with a credential, and Kustomizations applying its folders, applied
// as their authors would, with no spec.suspend.

/** The Secret and GitRepository "state" that fetch the environment's repository, branch main. */
export async function fluxSource(
  env: Pick<MirrorEnvironment, "kc" | "core" | "url">,
  namespace: string,
  user: { username: string; password: string },
): Promise<void> {
  await env.core.createNamespacedSecret({
    namespace,
    body: {
      metadata: { name: "flux-git" },
      stringData: { username: user.username, password: user.password },
    },
  });
  await new ResourceClient<GitRepository>(env.kc, gitRepositoryType).apply(
    {
      metadata: { name: "state", namespace },
      spec: { url: env.url, ref: { branch: "main" }, interval: "1m", secretRef: { name: "flux-git" } },
    } as GitRepository,
    "kubectl",
  );
}

/** A Kustomization applying `path` of the GitRepository "state", pruning, with no spec.suspend. */
export function kustomization(
  namespace: string,
  name: string,
  path: string,
  /** Where the GitRepository "state" is, when not beside the Kustomization. */
  sourceNamespace?: string,
): Kustomization {
  const sourceRef = {
    kind: "GitRepository",
    name: "state",
    ...(sourceNamespace ? { namespace: sourceNamespace } : {}),
  };
  return {
    metadata: { name, namespace },
    spec: { path, prune: true, interval: "10m", sourceRef },
  } as Kustomization;
}

/** A FluxClaim holding Kustomization `kustomizationName` through the namespace's KubeProvider "self". */
export function fluxClaim(namespace: string, name: string, kustomizationName = name): FluxClaim {
  return {
    apiVersion: "configbutler.ai/v1alpha3",
    kind: "FluxClaim",
    metadata: { name, namespace },
    spec: { kubeProviderRef: { name: "self" }, kustomizationRef: { name: kustomizationName } },
  };
}
