import type { KubeConfig, KubernetesObject } from "@kubernetes/client-node";
import type { Controller } from "./controller.ts";
import { SharedInformer } from "./informer.ts";
import type { InformerSource } from "../kube/sources.ts";
import type { Logger } from "../telemetry/logger.ts";
import { LeaderElector, defaultLeaseTimings, type LeaderElectionConfig } from "./leaderelection.ts";
import { untilAborted } from "../timing/sleep.ts";
import { keepConnections } from "../kube/connections.ts";

/** Something the manager starts and stops, such as the watch manager or the branch workers. */
export interface Runnable {
  name: string;
  /** Runnables that act on the cluster's state run only on the elected leader. */
  needLeaderElection: boolean;
  /** Runs until `signal` aborts. */
  start(signal: AbortSignal): Promise<void>;
}

export interface ManagerOptions {
  /** Without it, this process leads at once (for tests and single-process runs). */
  leaderElection?: Omit<LeaderElectionConfig, keyof typeof defaultLeaseTimings> &
    Partial<typeof defaultLeaseTimings>;
  logger: Logger;
}

/**
 * Owns the shared informers, the controllers and the other runnables of one process. Informers,
 * runnables that do not need leadership and every-replica controllers start at once; the other
 * controllers and the rest start when this process becomes leader. A lost lease stops the
 * manager: a process that might no longer be the only writer must not go on writing.
 */
export class Manager {
  private readonly informers = new Map<string, SharedInformer<KubernetesObject>>();
  private readonly controllers: Controller[] = [];
  private readonly runnables: Runnable[] = [];
  private readonly running: Promise<unknown>[] = [];
  /** The leader's runnables: the Lease is released only once they have all stopped. */
  private readonly leading: Promise<unknown>[] = [];
  private readonly stopController = new AbortController();
  private elector: LeaderElector | undefined;
  private election: { abort: AbortController; run: Promise<void> } | undefined;
  private leaderSignal: AbortController | undefined;
  private synced = false;
  private readonly leadingListeners: (() => void)[] = [];
  private stopping = false;
  private lostLease = false;

  readonly kubeConfig: KubeConfig;

  constructor(
    kubeConfig: KubeConfig,
    private readonly options: ManagerOptions,
  ) {
    this.kubeConfig = keepConnections(kubeConfig);
  }

  get logger(): Logger {
    return this.options.logger;
  }

  /** True once every informer holds a complete list: the process can serve. */
  get ready(): boolean {
    return this.synced && !this.stopping;
  }

  get isLeader(): boolean {
    return this.leaderSignal !== undefined;
  }

  /** The informer for a collection, shared by every controller that asks for the same path. */
  informer<T extends KubernetesObject>(source: InformerSource<T>): SharedInformer<T> {
    let informer = this.informers.get(source.path);
    if (!informer) {
      informer = new SharedInformer(
        this.kubeConfig,
        source,
        this.logger,
      ) as unknown as SharedInformer<KubernetesObject>;
      this.informers.set(source.path, informer);
    }
    return informer as unknown as SharedInformer<T>;
  }

  addController(controller: Controller): void {
    this.controllers.push(controller);
  }

  /** Calls `listener` when this process starts leading: an every-replica controller's status is its own now. */
  onLeading(listener: () => void): void {
    this.leadingListeners.push(listener);
  }

  addRunnable(runnable: Runnable): void {
    this.runnables.push(runnable);
  }

  /**
   * Starts everything and resolves when the manager has stopped: after `stop()`, or after the
   * lease was lost (then it rejects, so the process exits non-zero and is restarted).
   */
  async start(): Promise<void> {
    const signal = this.stopController.signal;
    // A stop while the informers still list must not wait for a list that never comes: a
    // stopped informer never syncs, and its start may never settle.
    const informers = [...this.informers.values()];
    await Promise.race([
      Promise.all(informers.map((i) => i.start())).then(() => Promise.all(informers.map((i) => i.synced))),
      untilAborted(signal),
    ]);
    if (signal.aborted) return;
    this.synced = true;
    for (const r of this.runnables.filter((r) => !r.needLeaderElection)) this.running.push(r.start(signal));
    for (const c of this.controllers.filter((c) => c.everyReplica)) this.running.push(c.run());

    const election = this.options.leaderElection;
    if (!election) {
      this.startLeading();
    } else {
      this.elector = new LeaderElector(
        this.kubeConfig,
        { ...defaultLeaseTimings, ...election },
        {
          onStartedLeading: () => this.startLeading(),
          onStoppedLeading: () => {
            this.lostLease = !this.stopping;
            this.stop().catch((err: unknown) => this.logger.error("stop failed", { error: String(err) }));
          },
          onNewLeader: (identity) => this.logger.info("leader observed", { identity }),
        },
        this.logger,
      );
      const abort = new AbortController();
      this.election = { abort, run: this.elector.run(abort.signal) };
    }
    await untilAborted(signal);
    await Promise.allSettled(this.running);
    if (this.lostLease) throw new Error("lost the leader election lease");
  }

  /**
   * Stops campaigning, then the leader's work, and waits for it (a branch worker publishes what
   * it holds), then gives up the lease, so a standby takes over at once and never while the old
   * leader still writes; stops the other runnables (Redis, which that work may still need) and
   * the informers last.
   */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.election?.abort.abort();
    await this.election?.run;
    this.leaderSignal?.abort();
    this.leaderSignal = undefined;
    await Promise.all(this.controllers.map((c) => c.stop()));
    await Promise.allSettled(this.leading);
    await this.elector?.release();
    this.stopController.abort();
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
  }

  private startLeading(): void {
    if (this.stopping) return;
    const leader = new AbortController();
    this.leaderSignal = leader;
    for (const c of this.controllers.filter((c) => !c.everyReplica)) this.running.push(c.run());
    for (const r of this.runnables.filter((r) => r.needLeaderElection)) {
      const run = r.start(leader.signal);
      this.running.push(run);
      this.leading.push(run);
    }
    for (const listener of this.leadingListeners) listener();
  }
}
