// The source-cluster path of CommitRequest: one watch of CommitRequests per KubeProvider whose
// spec.commitRequests asks for them, on the provider's own connection, each request served
// through the same core as the control cluster's, four at a time. The KubeProvider reconciler
// keeps the set in line with the providers, and reports each watch as CommitRequestsServed.
import type { KubeConfig } from "@kubernetes/client-node";
import { commitRequests, resourceTypes, type CommitRequest } from "../generated/v1alpha3/index.ts";
import type { CommitRequestCore, Path } from "../internal/commitrequest/core.ts";
import { informerSource } from "../internal/kube/sources.ts";
import type { SaveRoutes } from "../internal/git/index.ts";
import { Controller, type Ownership, type Request } from "../internal/operator/controller.ts";
import { SharedInformer } from "../internal/operator/informer.ts";
import type { Logger } from "../internal/telemetry/logger.ts";
import type { Runnable } from "../internal/operator/manager.ts";
import { untilAborted } from "../internal/timing/sleep.ts";
import { CommitRequestReconciler } from "./commitrequest.ts";
import { errorText } from "../internal/telemetry/errortext.ts";

/** How one provider's watch stands, for its CommitRequestsServed. */
export type ServedState = "watching" | "starting";

interface Served {
  fingerprint: string;
  informer: SharedInformer<CommitRequest>;
  controller: Controller;
  reconciler: CommitRequestReconciler;
  synced: boolean;
  running?: Promise<unknown>;
}

export class CommitRequestServer implements Runnable {
  readonly name = "commitrequest-server";
  readonly needLeaderElection = true;
  private readonly served = new Map<string, Served>();
  private running = false;
  private readonly servedListeners: ((providerKey: string) => void)[] = [];

  constructor(
    private readonly core: CommitRequestCore,
    private readonly logger: Logger,
    private readonly saves: Pick<SaveRoutes, "forget" | "onChanged">,
    /** With more than one replica: which replica serves each request, by its shard. */
    private readonly sharing?: {
      ownership: Ownership;
      shardOf: (request: CommitRequest | undefined) => string | undefined;
    },
  ) {
    saves.onChanged((id) => {
      for (const served of this.served.values()) {
        const key = served.reconciler.keyOf(id);
        if (key) served.controller.queue.add(key);
      }
    });
  }

  /** Calls `listener` when a provider's watch first holds its list, so its status says so. */
  onServed(listener: (providerKey: string) => void): void {
    this.servedListeners.push(listener);
  }

  /** How the provider's watch stands; undefined when it serves none. */
  state(providerKey: string): ServedState | undefined {
    const served = this.served.get(providerKey);
    return served && (served.synced ? "watching" : "starting");
  }

  /**
   * Serves a provider's CommitRequests on its connection: the same fingerprint keeps the watch
   * running, a new one (a rotated credential, a changed spec) replaces it.
   */
  async serve(providerKey: string, fingerprint: string, kubeConfig: KubeConfig, deletesFinished: boolean) {
    const existing = this.served.get(providerKey);
    if (existing?.fingerprint === `${fingerprint}/${deletesFinished}`) return;
    if (existing) await this.release(providerKey);
    const path: Path = { cluster: "source", provider: providerKey, deletesFinished };
    const reconciler = new CommitRequestReconciler(commitRequests(kubeConfig), this.core, path, this.saves);
    const informer = new SharedInformer<CommitRequest>(
      kubeConfig,
      informerSource(kubeConfig, resourceTypes.CommitRequest),
      this.logger,
    );
    const sharing = this.sharing;
    const controller = new Controller(`commitrequest-${providerKey}`, reconciler, this.logger, {
      concurrency: 4,
      ...(sharing ? { shardOf: (r: Request) => sharing.shardOf(informer.get(r.name, r.namespace)) } : {}),
    }).for(informer);
    if (sharing) controller.shareBy(sharing.ownership);
    const served: Served = {
      fingerprint: `${fingerprint}/${deletesFinished}`,
      informer,
      controller,
      reconciler,
      synced: false,
    };
    this.served.set(providerKey, served);
    void informer.synced.then(() => {
      served.synced = true;
      for (const listener of this.servedListeners) listener(providerKey);
    });
    if (this.running) this.run(served);
  }

  /** Stops serving a provider's CommitRequests. */
  async release(providerKey: string): Promise<void> {
    const served = this.served.get(providerKey);
    if (!served) return;
    this.served.delete(providerKey);
    await served.controller.stop();
    await served.informer.stop();
    await served.running;
  }

  async start(signal: AbortSignal): Promise<void> {
    this.running = true;
    for (const served of this.served.values()) this.run(served);
    await untilAborted(signal);
    this.running = false;
    await Promise.all([...this.served.keys()].map((key) => this.release(key)));
  }

  private run(served: Served): void {
    served.running = Promise.all([
      served.informer.start().catch((err: unknown) => {
        this.logger.error("the source cluster's CommitRequest watch failed to start", {
          error: errorText(err),
        });
      }),
      served.controller.run(),
    ]);
  }
}
