// CommitRequest on the control cluster: serves each request through the shared core, four at a
// time, so one request's author wait does not hold up the others. The informer only says which
// request to look at; the request itself is read through the uncached client, because each step
// is decided from the object as stored and a cached copy may be a step behind. A worker's report
// wakes its request at once; otherwise the owner looks again every couple of seconds.
import { hostname } from "node:os";
import type { KubernetesObject } from "@kubernetes/client-node";
import {
  commitRequests,
  resourceTypes,
  type CommitRequest,
  type GitTarget,
  type KubeProvider,
} from "../generated/v1alpha3/index.ts";
import { CommitRequestCore, type CoreDeps, type Path, type Saves } from "../internal/commitrequest/core.ts";
import type { SaveRoutes } from "../internal/git/index.ts";
import { informerSource, namespaceType } from "../internal/kube/sources.ts";
import { Controller, type Reconciler, type Request, type Result } from "../internal/operator/controller.ts";
import type { SharedInformer } from "../internal/operator/informer.ts";
import { EventRecorder } from "../internal/operator/events.ts";
import { outcomeEvent } from "../internal/commitrequest/outcome.ts";
import type { Manager } from "../internal/operator/manager.ts";
import type { ResourceClient } from "../internal/kube/resourceclient.ts";
import { keyOf } from "../internal/types/names.ts";
import { commitRequests as commitRequestsTotal } from "../internal/telemetry/instruments.ts";
import { fieldManager } from "../internal/operator/fieldmanager.ts";

/** What the core needs besides the cluster it serves; the control cluster's informers provide the rest. */
export type CommitRequestDeps = Pick<
  CoreDeps,
  "saves" | "creator" | "retentionMs" | "withdrawMarginMs" | "now"
>;

/**
 * Serves the CommitRequests of one cluster through the core: the control cluster's, or one
 * source cluster's. The request is read uncached; the uid each served request has is kept, so a
 * worker's report wakes it, and forgotten (with what its worker was asked) once it is gone.
 */
export class CommitRequestReconciler implements Reconciler {
  /** The request each served uid is, so a worker's report wakes it. */
  private readonly keys = new Map<string, string>();

  constructor(
    private readonly client: ResourceClient<CommitRequest>,
    private readonly core: CommitRequestCore,
    private readonly path: Path,
    private readonly saves: Pick<Saves, "forget">,
  ) {}

  async reconcile(request: Request): Promise<Result> {
    const key = keyOf({ namespace: request.namespace ?? "", name: request.name });
    const stored = await this.client.get(request.namespace, request.name);
    if (!stored) {
      for (const [uid, served] of this.keys) {
        if (served !== key) continue;
        this.keys.delete(uid);
        this.saves.forget(uid);
      }
      return {};
    }
    const uid = stored.metadata.uid ?? "";
    this.keys.set(uid, key);
    const result = await this.core.serve(this.client, stored, this.path);
    if (result.requeueAfterMs === undefined) this.keys.delete(uid);
    return result;
  }

  /** The request a worker reported on, if this reconciler serves it. */
  keyOf(uid: string): string | undefined {
    return this.keys.get(uid);
  }
}

/**
 * The core, built on the control cluster's GitTargets, KubeProviders and Namespace labels. A
 * finished request on the control cluster records its outcome as an Event; one on a source
 * cluster says it in its status only, since this process records Events on its own cluster.
 */
export function commitRequestCore(manager: Manager, deps: CommitRequestDeps): CommitRequestCore {
  const kc = manager.kubeConfig;
  const targets = manager.informer<GitTarget>(informerSource(kc, resourceTypes.GitTarget));
  const providers = manager.informer<KubeProvider>(informerSource(kc, resourceTypes.KubeProvider));
  const namespaces = manager.informer<KubernetesObject>(informerSource(kc, namespaceType));
  const events = new EventRecorder(kc, hostname(), manager.logger);
  return new CommitRequestCore({
    ...deps,
    targets: (ref) => targets.get(ref.name, ref.namespace),
    providers: (ref) => providers.get(ref.name, ref.namespace),
    namespaceLabels: (namespace) => namespaces.get(namespace)?.metadata?.labels ?? {},
    onFinished: (outcome, request, path) => {
      commitRequestsTotal.inc({ outcome: outcome.reason });
      if (path.cluster !== "control") return;
      const { type, reason, action, note } = outcomeEvent(outcome);
      void events.record(request, type, reason, action, note);
    },
    fieldManager,
    logger: manager.logger,
  });
}

export function setupCommitRequestController(
  manager: Manager,
  core: CommitRequestCore,
  saves: Pick<SaveRoutes, "forget" | "onChanged">,
  /** With more than one replica: a CommitRequest's shard, from the object. */
  shardOf?: (request: CommitRequest | undefined) => string | undefined,
): Controller {
  const requests: SharedInformer<CommitRequest> = manager.informer(
    informerSource(manager.kubeConfig, resourceTypes.CommitRequest),
  );
  const reconciler = new CommitRequestReconciler(
    commitRequests(manager.kubeConfig),
    core,
    { cluster: "control" },
    saves,
  );
  const controller = new Controller("commitrequest", reconciler, manager.logger, {
    concurrency: 4,
    ...(shardOf ? { shardOf: (r: Request) => shardOf(requests.get(r.name, r.namespace)) } : {}),
  }).for(requests);
  saves.onChanged((id) => {
    const key = reconciler.keyOf(id);
    if (key) controller.queue.add(key);
  });
  manager.addController(controller);
  return controller;
}
