import type { KubeConfig, KubernetesObject } from "@kubernetes/client-node";
import type { Controller, Ownership } from "./controller.ts";
import { SharedInformer } from "./informer.ts";
import type { InformerSource } from "../kube/sources.ts";
import type { Logger } from "../telemetry/logger.ts";
import type { FenceToken } from "../types/fence.ts";
import { newProcessIdentity } from "./identity.ts";
import { LeaderElector, defaultLeaseTimings, type LeaderElectionConfig } from "./leaderelection.ts";
import { untilAborted } from "../timing/sleep.ts";
import { keepConnections } from "../kube/connections.ts";
import { ShardLeases, type ShardWork } from "./shardleases.ts";
import { errorText } from "../telemetry/errortext.ts";

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
  /**
   * With leader election: share the work out among every replica (`shareWork` says what the
   * shards are), on Leases named "<sharePrefix>-…" in the election's namespace.
   */
  sharePrefix?: string;
  logger: Logger;
}

/**
 * Owns the shared informers, the controllers and the other runnables of one process. Informers,
 * runnables that do not need leadership and every-replica controllers start at once; the other
 * controllers and the rest start when this process becomes leader. A lost lease stops the
 * manager: a process that might no longer be the only writer must not go on writing.
 *
 * Shared out (`sharePrefix`), every replica is active: the runnables that need leadership and
 * the sharded controllers start at once on each, and each sharded controller reconciles only the
 * objects of the shards this replica holds; only the controllers that are neither wait for the
 * leader Lease, which also handles the objects of no shard.
 */
export class Manager implements Ownership {
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
  private shards: ShardLeases | undefined;
  /** Shared out: stops the leader runnables, which run on every replica then. */
  private readonly work = new AbortController();
  private readonly ownershipListeners: ((shards: readonly string[] | "leader") => void)[] = [];

  readonly kubeConfig: KubeConfig;
  /** This process's fencing token when it shares nothing out: its identity, unique per start. */
  private readonly processToken: string;

  constructor(
    kubeConfig: KubeConfig,
    private readonly options: ManagerOptions,
  ) {
    this.kubeConfig = keepConnections(kubeConfig);
    this.processToken = options.leaderElection?.identity ?? newProcessIdentity();
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

  /** Whether every replica is active, each on its share of the work. */
  get sharded(): boolean {
    return this.options.sharePrefix !== undefined && this.options.leaderElection !== undefined;
  }

  /**
   * Shares the work out: `work` names the shards and hands one over. Call it before `start`;
   * without `sharePrefix` and leader election it does nothing, and this process owns all.
   */
  shareWork(work: ShardWork): void {
    const election = this.options.leaderElection;
    if (!this.sharded || !election) return;
    const timings = { ...defaultLeaseTimings, ...election };
    this.shards = new ShardLeases(
      this.kubeConfig,
      {
        ...timings,
        namespace: election.namespace,
        identity: election.identity,
        prefix: this.options.sharePrefix!,
      },
      work,
      this.logger,
    );
    this.shards.onChanged((shards) => this.ownershipChanged(shards));
  }

  /**
   * Why this process may not push to a shard's branch now (a fence: see ShardLeases.safelyHeld),
   * or undefined when it may; a process that does not share its work out owns every branch.
   */
  mayPush(shard: string | undefined): string | undefined {
    if (!this.sharded) return undefined;
    if (shard === undefined) return "the branch's repository is not known, so neither is its Lease";
    if (!this.shards) return "the shard Leases are not running";
    return this.shards.safelyHeld(shard);
  }

  /**
   * The token this process writes a shard's branch state in Redis under (types/fence.ts): its
   * holding's, or, for a process that does not share its work out,
   * its own, so the process after it (a restart, a rolling update's new pod) fences it from its
   * first write of the branch's state on.
   */
  fenceToken(shard: string | undefined): FenceToken {
    if (!this.sharded) return { token: this.processToken };
    if (shard === undefined)
      return { refused: "the branch's repository is not known, so neither is its Lease" };
    if (!this.shards) return { refused: "the shard Leases are not running" };
    return this.shards.fenceToken(shard);
  }

  owns(shard: string | undefined): boolean {
    if (!this.sharded) return true;
    if (shard === undefined) return this.isLeader;
    return this.shards?.holds(shard) ?? false;
  }

  onChanged(listener: (shards: readonly string[] | "leader") => void): () => void {
    this.ownershipListeners.push(listener);
    return () => {
      const at = this.ownershipListeners.indexOf(listener);
      if (at !== -1) this.ownershipListeners.splice(at, 1);
    };
  }

  private ownershipChanged(shards: readonly string[] | "leader"): void {
    for (const listener of this.ownershipListeners) listener(shards);
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
    if (this.sharded) controller.shareBy(this);
    this.controllers.push(controller);
  }

  /** Whether a controller starts with the informers, not with leadership. */
  private startsAtOnce(controller: Controller): boolean {
    return controller.everyReplica || (this.sharded && controller.shardOf !== undefined);
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
    for (const c of this.controllers.filter((c) => this.startsAtOnce(c))) this.running.push(c.run());
    if (this.sharded) {
      // Every replica runs the work; the shards say which part of it is whose.
      for (const r of this.runnables.filter((r) => r.needLeaderElection)) {
        const run = r.start(this.work.signal);
        this.running.push(run);
        this.leading.push(run);
      }
      this.shards?.start();
    }

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
            this.stop().catch((err: unknown) => this.logger.error("stop failed", { error: errorText(err) }));
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
    this.shards?.drain();
    this.election?.abort.abort();
    await this.election?.run;
    this.leaderSignal?.abort();
    this.leaderSignal = undefined;
    await Promise.all(this.controllers.map((c) => c.stop()));
    this.work.abort();
    await Promise.allSettled(this.leading);
    // The work has stopped and published: the shards are free for the others at once.
    await this.shards?.stop();
    await this.elector?.release();
    this.stopController.abort();
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
  }

  private startLeading(): void {
    if (this.stopping) return;
    const leader = new AbortController();
    this.leaderSignal = leader;
    for (const c of this.controllers.filter((c) => !this.startsAtOnce(c))) this.running.push(c.run());
    if (!this.sharded) {
      for (const r of this.runnables.filter((r) => r.needLeaderElection)) {
        const run = r.start(leader.signal);
        this.running.push(run);
        this.leading.push(run);
      }
    }
    for (const listener of this.leadingListeners) listener();
    this.ownershipChanged("leader");
  }
}
