// The real Flux notification-controller, built from Go modules by hack/tools/flux.sh (tool
// flux-notification in hack/tools/tools.sh), run out of cluster against a test ControlPlane as its
// admin, beside flux.ts's source-controller and kustomize-controller, so a test can call its
// Receivers' webhooks as a Git host would. It lives apart from flux.ts, with a finder of its own
// (notificationControllerBinary), so that only the files importing this module need it built
// (hack/tools/needs.ts): its cold build takes minutes, and most Flux tests never run it.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { readdir } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import type { KubeConfig } from "@kubernetes/client-node";
import { ResourceClient, type ResourceType } from "../../internal/kube/resourceclient.ts";
import { repoRoot } from "./binaries.ts";
import type { ControlPlane } from "./controlplane.ts";
import { ready, startFlux, type Flux, type FluxObject, type FluxOptions } from "./flux.ts";
import { keepCopy } from "./keeplogs.ts";
import { installCrdFiles } from "./manifests.ts";
import { freePort, startOnChosenPorts } from "./ports.ts";
import { ManagedProcess } from "./process.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "./reaper.ts";

let located: string | undefined;

/**
 * The pinned notification-controller built by `make flux-notification`. Its CRDs sit in crds/
 * beside it, copied from the same module. FLUX_NOTIFICATION_CONTROLLER_PATH names another binary
 * (with its own crds/ beside it).
 */
export function notificationControllerBinary(): string {
  located ??=
    process.env.FLUX_NOTIFICATION_CONTROLLER_PATH ??
    execFileSync("bash", [join(repoRoot, "hack/tools/flux.sh"), "notification-controller", "--print-path"], {
      encoding: "utf8",
    }).trim();
  if (!existsSync(located)) {
    throw new Error(`notification-controller is missing (${located}): run \`make flux-notification\` first`);
  }
  return located;
}

/** The CRD files (Alert, Provider, Receiver) of the module the binary was built from. */
export async function notificationCrdFiles(): Promise<string[]> {
  const dir = join(dirname(notificationControllerBinary()), "crds");
  return (await readdir(dir))
    .filter((f) => f.endsWith(".yaml"))
    .sort()
    .map((f) => join(dir, f));
}

/** notification-controller's Receiver, which annotates the objects it names when its webhook is called. */
export const receiverType: ResourceType = {
  group: "notification.toolkit.fluxcd.io",
  version: "v1",
  kind: "Receiver",
  plural: "receivers",
  namespaced: true,
};

export type Receiver = FluxObject & {
  /** Where its webhook is served, `/hook/<digest>`, once its Secret is read. */
  status?: { webhookPath?: string };
};

export type NotificationOptions = Pick<FluxOptions, "runtimeNamespace" | "logLevel" | "readyTimeoutMs">;

export interface NotificationController {
  dir: string;
  crds: string[];
  process: ManagedProcess;
  /**
   * `http://127.0.0.1:<port>`: the webhook receiver server. A Receiver is called at this plus its
   * status.webhookPath (`/hook/<digest>`).
   */
  receiverUrl: string;
  /** Receivers (notification.toolkit.fluxcd.io/v1). */
  receivers(kubeConfig: KubeConfig): ResourceClient<Receiver>;
  /** Kills exactly the controller this started and removes its directory. */
  stop(): Promise<void>;
}

/**
 * Installs notification-controller's CRDs (Alert, Provider, Receiver) into the plane, starts it
 * on free loopback ports, and waits until its readiness endpoint answers and its webhook receiver
 * server accepts requests. The options mean what startFlux's do.
 */
export function startNotificationController(
  plane: ControlPlane,
  options: NotificationOptions = {},
): Promise<NotificationController> {
  // As startFlux: any exit while it starts is taken for a lost port.
  return startOnChosenPorts(
    () => startNotificationControllerOnce(plane, options),
    (err) => /exited/.test(String(err)),
  );
}

async function startNotificationControllerOnce(
  plane: ControlPlane,
  options: NotificationOptions,
): Promise<NotificationController> {
  const crds = await installCrdFiles(plane.kubeConfig(), await notificationCrdFiles());
  const dir = makeOwnedTempDir("flux-notification");
  let controller: ManagedProcess | undefined;
  try {
    const health = await freePort();
    const receiverPort = await freePort();
    const receiverUrl = `http://127.0.0.1:${receiverPort}`;
    controller = ManagedProcess.start({
      name: "notification-controller",
      command: notificationControllerBinary(),
      args: [
        `--metrics-addr=127.0.0.1:${await freePort()}`,
        `--health-addr=127.0.0.1:${health}`,
        // One replica: no Lease to wait for, none left behind in the plane.
        "--enable-leader-election=false",
        "--watch-all-namespaces=true",
        // Where its own event server listens (startFlux's controllers send theirs to the API
        // server only, so nothing posts to it). Its receiver server logs no address it bound, so
        // port 0 could not be read back: both get ports chosen here.
        `--events-addr=127.0.0.1:${await freePort()}`,
        `--log-level=${options.logLevel ?? "info"}`,
        `--receiverAddr=127.0.0.1:${receiverPort}`,
      ],
      logFile: join(dir, "notification-controller.log"),
      // No --kubeconfig flag, as with startFlux's controllers: KUBECONFIG names the plane's admin.
      env: {
        ...process.env,
        KUBECONFIG: plane.kubeconfigPath,
        RUNTIME_NAMESPACE: options.runtimeNamespace ?? "flux-system",
      },
    });

    const timeoutMs = options.readyTimeoutMs ?? 60_000;
    await Promise.all([
      ready(controller, `http://127.0.0.1:${health}/readyz`, timeoutMs),
      // The receiver server serves /hook/ only: a 404 for / means it listens.
      ready(controller, `${receiverUrl}/`, timeoutMs, () => true),
    ]);

    const started = controller;
    return {
      dir,
      crds,
      process: started,
      receiverUrl,
      receivers: (kc) => new ResourceClient<Receiver>(kc, receiverType),
      stop: async () => {
        await started.stop();
        // Its log, to read after a failure (KEEP_TEST_LOGS).
        keepCopy(basename(dir), dir, ".");
        removeOwnedTempDir(dir);
      },
    };
  } catch (err) {
    await controller?.stop();
    removeOwnedTempDir(dir);
    throw err;
  }
}

/** startFlux's two controllers and notification-controller beside them, as one. */
export interface FluxWithNotification extends Flux {
  notificationController: ManagedProcess;
  /** NotificationController.receiverUrl. */
  receiverUrl: string;
  receivers(kubeConfig: KubeConfig): ResourceClient<Receiver>;
}

/**
 * startFlux(plane, options), then startNotificationController beside it: `crds` names all three
 * controllers' CRDs, and stop() kills exactly the three controllers this started.
 */
export async function startFluxWithNotification(
  plane: ControlPlane,
  options: FluxOptions = {},
): Promise<FluxWithNotification> {
  const flux = await startFlux(plane, options);
  let notification: NotificationController;
  try {
    notification = await startNotificationController(plane, options);
  } catch (err) {
    await flux.stop();
    throw err;
  }
  return {
    ...flux,
    crds: [...flux.crds, ...notification.crds],
    notificationController: notification.process,
    receiverUrl: notification.receiverUrl,
    receivers: (kc) => notification.receivers(kc),
    stop: async () => {
      await Promise.all([notification.stop(), flux.stop()]);
    },
  };
}
