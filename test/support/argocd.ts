// Argo CD, as far as the tests need it. The Application CRD is Argo CD's own, as its release
// publishes it (hack/tools/argocd.sh, pinned in versions.env). Argo CD's application-controller
// cannot be built from Go modules here (its gitops-engine module passes neither go get nor go mod
// tidy on this machine's module proxy), so this test controller plays its part on the
// Application, exactly as applier-claims.md's fact table reads Argo CD 3.5.0's source, and no
// more:
//   - automated sync is on when syncPolicy.automated is present and its enabled is unset or true;
//     it then sets an operation for the branch's tip when the last sync was of another revision
//     (autoSync), initiated {automated: true};
//   - a set operation is started by copying it, info included, into status.operationState
//     (NewOperationState), phase Running; the controller never starts an operation while
//     another's state is Running with that operation still set;
//   - the sync applies the folder at operation.sync.revision with field manager
//     argocd-controller, stamping argocd.argoproj.io/tracking-id, and with sync.prune deletes
//     the objects it tracks that the folder no longer holds;
//   - it ends the operation by writing the state (Succeeded, or Failed with the error), the
//     revision synced, and clearing operation, in one update: the CRD has no status subresource.
// An Application annotated test.configbutler.ai/paused: "true" is left alone, so a test can hold
// a sync somebody set "running".
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import {
  KubernetesObjectApi,
  PatchStrategy,
  loadAllYaml,
  type KubeConfig,
  type KubernetesObject,
} from "@kubernetes/client-node";
import type { ArgoCDClaim } from "../../generated/v1alpha3/index.ts";
import {
  applicationType,
  tokenOf,
  type Application,
  type Operation,
} from "../../internal/applier/argocd/view.ts";
import { ResourceClient, statusCodeOf } from "../../internal/kube/resourceclient.ts";
import { repoRoot } from "./binaries.ts";
import type { GitServer } from "./gitserver.ts";
import { installCrdFiles } from "./manifests.ts";

export { applicationType, type Application } from "../../internal/applier/argocd/view.ts";

export const argoManager = "argocd-controller";
export const trackingAnnotation = "argocd.argoproj.io/tracking-id";
export const pausedAnnotation = "test.configbutler.ai/paused";

/** The Application CRD of the pinned Argo CD ("current"), or of the newest one without the switch ("old"). */
export function argoCDCrdFile(which: "current" | "old" = "current"): string {
  const path = execFileSync("bash", [join(repoRoot, "hack/tools/argocd.sh"), "--print-path", which], {
    encoding: "utf8",
  }).trim();
  if (!existsSync(path))
    throw new Error(`Argo CD's Application CRD is missing (${path}): run \`make argocd\` first`);
  return path;
}

export async function installArgoCDCrd(kc: KubeConfig, which: "current" | "old" = "current"): Promise<void> {
  await installCrdFiles(kc, [argoCDCrdFile(which)]);
}

/** An Application syncing `path` of the Git server's repository "state" at `branch`. */
export function application(
  namespace: string,
  name: string,
  repoURL: string,
  path: string,
  syncPolicy?: Record<string, unknown>,
  branch = "main",
): Application {
  return {
    apiVersion: "argoproj.io/v1alpha1",
    kind: "Application",
    metadata: { name, namespace },
    spec: {
      project: "default",
      source: { repoURL, targetRevision: branch, path },
      destination: { server: "https://kubernetes.default.svc", namespace },
      ...(syncPolicy ? { syncPolicy } : {}),
    },
  };
}

/** An ArgoCDClaim holding Application `application` through the namespace's KubeProvider "self". */
export function argoCDClaim(namespace: string, name: string, application = name): ArgoCDClaim {
  return {
    apiVersion: "configbutler.ai/v1alpha3",
    kind: "ArgoCDClaim",
    metadata: { name, namespace },
    spec: { kubeProviderRef: { name: "self" }, applicationRef: { name: application } },
  };
}

export interface TestArgoCD {
  /** Every sync this controller started, in order: the Application, and the operation as set. */
  syncs: { application: string; operation: Operation }[];
  stop(): Promise<void>;
}

/** Runs the test application-controller over the Applications in `namespaces`. */
export function startTestArgoCD(kc: KubeConfig, git: GitServer, namespaces: string[]): TestArgoCD {
  const apps = new ResourceClient<Application>(kc, applicationType);
  const objects = KubernetesObjectApi.makeApiClient(kc);
  const syncs: TestArgoCD["syncs"] = [];
  let stopped = false;

  const update = (app: Application) => apps.replace(app);

  /** The folder at `revision`, as the objects its YAML files hold. */
  const manifests = async (path: string, revision: string): Promise<KubernetesObject[]> => {
    const listing = await git.gitIn("state", ["ls-tree", "-r", "--name-only", revision, "--", `${path}/`]);
    const files = listing.split("\n").filter((f) => /\.ya?ml$/.test(f) && !f.endsWith(".sops.yaml"));
    const docs: KubernetesObject[] = [];
    for (const file of files) {
      const text = (await git.fileAt("state", revision, file)) ?? "";
      for (const doc of loadAllYaml(text) as KubernetesObject[])
        if (doc?.apiVersion && doc.kind && doc.kind !== "Kustomization") docs.push(doc);
    }
    return docs;
  };

  const trackingId = (app: Application, o: KubernetesObject) => {
    const group = o.apiVersion!.includes("/") ? o.apiVersion!.split("/")[0] : "";
    return `${app.metadata!.name}:${group}/${o.kind}:${o.metadata!.namespace ?? ""}/${o.metadata!.name}`;
  };

  /** Applies the folder at the operation's revision; returns the error message, if it failed. */
  const sync = async (app: Application, operation: Operation): Promise<string | undefined> => {
    const namespace = (app.spec!.destination as { namespace?: string }).namespace ?? app.metadata!.namespace!;
    const revision = operation.sync?.revision ?? "";
    try {
      const wanted = await manifests(app.spec!.source!.path!, revision);
      const ids = new Set<string>();
      for (const object of wanted) {
        const metadata = { ...object.metadata, namespace: object.metadata?.namespace ?? namespace };
        const o = { ...object, metadata } as KubernetesObject;
        const id = trackingId(app, o);
        ids.add(id);
        o.metadata!.annotations = { ...o.metadata!.annotations, [trackingAnnotation]: id };
        await objects.patch(o, undefined, undefined, argoManager, true, PatchStrategy.ServerSideApply);
      }
      if (operation.sync?.prune) {
        // Prune what this Application tracks and the folder no longer holds (ConfigMaps are what the tests sync).
        const { items } = await objects.list("v1", "ConfigMap", namespace);
        for (const o of items) {
          const id = o.metadata?.annotations?.[trackingAnnotation];
          if (id?.startsWith(`${app.metadata!.name}:`) && !ids.has(id))
            await objects.delete({
              apiVersion: "v1",
              kind: "ConfigMap",
              metadata: { name: o.metadata!.name!, namespace },
            });
        }
      }
      return undefined;
    } catch (err) {
      return String(err);
    }
  };

  const tipOf = async (app: Application) => git.branchHead("state", app.spec!.source!.targetRevision!);

  /** One pass over one Application, as the application-controller's refresh queue item. */
  const pass = async (app: Application): Promise<void> => {
    if (app.metadata?.annotations?.[pausedAnnotation] === "true") return;
    const operation = app.operation;
    const status = (app.status ?? {}) as Record<string, unknown> & Application["status"];
    if (!operation) {
      const automated = app.spec?.syncPolicy?.automated;
      const on = automated !== undefined && automated !== null && automated.enabled !== false;
      const synced = (status.sync as { revision?: string } | undefined)?.revision;
      const tip = await tipOf(app);
      if (on && tip && tip !== synced) {
        const auto: Operation = {
          sync: { revision: tip, prune: automated.prune === true },
          initiatedBy: { automated: true },
          retry: { limit: 5 },
        };
        const { operationState: _previous, ...rest } = status;
        await update({ ...app, operation: auto, status: rest });
      }
      return;
    }
    const started =
      status.operationState?.phase === "Running" &&
      tokenOf(status.operationState.operation) === tokenOf(operation) &&
      JSON.stringify(status.operationState.operation) === JSON.stringify(operation);
    if (!started) {
      // NewOperationState: the operation, info included, copied into the state; Running.
      const startedAt = new Date().toISOString();
      await update({
        ...app,
        status: { ...status, operationState: { operation, phase: "Running", startedAt } },
      });
      return;
    }
    syncs.push({ application: app.metadata!.name!, operation });
    const failure = await sync(app, operation);
    const fresh = (await apps.get(app.metadata!.namespace, app.metadata!.name!))!;
    const freshStatus = (fresh.status ?? {}) as Record<string, unknown> & Application["status"];
    const revision = operation.sync?.revision ?? "";
    const { operation: _done, ...withoutOperation } = fresh;
    await update({
      ...withoutOperation,
      status: {
        ...freshStatus,
        operationState: {
          ...freshStatus.operationState,
          operation,
          phase: failure ? "Failed" : "Succeeded",
          message: failure ?? "successfully synced (all tasks run)",
          finishedAt: new Date().toISOString(),
          syncResult: { revision },
        },
        ...(failure ? {} : { sync: { status: "Synced", revision } }),
      },
    });
  };

  const loop = (async () => {
    while (!stopped) {
      for (const namespace of namespaces) {
        const { items } = await apps.list(namespace).catch(() => ({ items: [] as Application[] }));
        for (const app of items) {
          // A conflict is a write that raced ours: the next pass reads again.
          await pass(app).catch((err: unknown) => {
            if (statusCodeOf(err) !== 409 && statusCodeOf(err) !== 404)
              console.error(`test Argo CD: a pass over ${app.metadata?.name} failed: ${String(err)}`);
          });
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
  })();

  return {
    syncs,
    async stop() {
      stopped = true;
      await loop;
    },
  };
}
