import { randomUUID } from "node:crypto";
import type { KubernetesObject } from "@kubernetes/client-node";
import { type SharedInformer } from "./informer.ts";
import { storeKeyOf, parseStoreKey, storeKey } from "../types/names.ts";
import { withFields, type Logger } from "../telemetry/logger.ts";
import { factsOf, generationChanged, type UpdatePredicate } from "./predicates.ts";
import { WorkQueue } from "./workqueue.ts";
import type { RateLimiter } from "./ratelimiter.ts";
import { errorText } from "../telemetry/errortext.ts";

/** Which object to reconcile. */
export interface Request {
  namespace?: string;
  name: string;
}

export interface Result {
  /** Reconcile this object again after this long, even if nothing changes. */
  requeueAfterMs?: number;
}

/** What one reconcile is given besides its object: a logger whose lines name the reconcile. */
export interface ReconcileContext {
  /** Every line carries controller, object ("<namespace>/<name>") and reconcileID. */
  logger: Logger;
  /** Unique per reconcile, so its lines can be told from another reconcile's of the same object. */
  reconcileID: string;
}

/** Reads the world, decides, acts, and writes status, for one object. Throwing requeues it with backoff. */
export interface Reconciler {
  reconcile(request: Request, context: ReconcileContext): Promise<Result | void>;
  /**
   * For a sharded controller: another replica handles the object now (or none does yet), so
   * this one lets go of what it holds for it in memory and writes nothing to the cluster.
   */
  disown?(request: Request, context: ReconcileContext): Promise<void>;
}

/** Which shards this replica holds: a sharded controller reconciles only the objects of those. */
export interface Ownership {
  /** Whether this replica handles a shard's objects now; `undefined` (no shard) is the leader's. */
  owns(shard: string | undefined): boolean;
  /**
   * Calls `listener` with the shards this replica started or stopped holding, or "leader" when
   * leadership moved, until the returned function is called.
   */
  onChanged(listener: (shards: readonly string[] | "leader") => void): () => void;
}

/** Maps a changed dependency to the objects that must reconcile because of it. */
export type Mapper<D extends KubernetesObject> = (dependency: D) => Request[];

export interface ControllerOptions {
  concurrency?: number;
  rateLimiter?: RateLimiter;
  /**
   * Runs on every replica from the start, not only on the leader: for a reconciler whose
   * in-process effect every replica needs (the push receiver's paths), which writes status only
   * while it leads (`Manager.isLeader`).
   */
  everyReplica?: boolean;
  /**
   * Shards the controller among replicas that all run: the shard an object belongs to (a
   * repository branch), or undefined for one the leader handles. Only the replica holding an
   * object's shard reconciles it; the others disown it. Without sharing (one active replica)
   * the controller runs on the leader and owns everything.
   */
  shardOf?: (request: Request) => string | undefined;
}

/**
 * One reconciler behind a work queue: the primary kind's changes and its dependencies' changes
 * become keys, and `concurrency` workers reconcile them, one key at a time each.
 */
export class Controller {
  readonly queue: WorkQueue;
  private readonly concurrency: number;
  readonly everyReplica: boolean;
  readonly shardOf: ((request: Request) => string | undefined) | undefined;
  private ownership: Ownership | undefined;
  private stopSharing: (() => void) | undefined;
  /** The primary kind's informer, whose objects a change of ownership requeues. */
  private primary: SharedInformer<KubernetesObject> | undefined;

  constructor(
    readonly name: string,
    private readonly reconciler: Reconciler,
    private readonly logger: Logger,
    options: ControllerOptions = {},
  ) {
    this.queue = new WorkQueue(options.rateLimiter);
    this.concurrency = options.concurrency ?? 1;
    this.everyReplica = options.everyReplica ?? false;
    this.shardOf = options.shardOf;
  }

  /**
   * Reconciles from now on only the objects whose shard `ownership` says this replica holds, and
   * looks again at every object whose shard this replica starts or stops holding.
   */
  shareBy(ownership: Ownership): void {
    const shardOf = this.shardOf;
    if (!shardOf) return;
    this.ownership = ownership;
    this.stopSharing = ownership.onChanged((shards) => {
      const moved = shards === "leader" ? undefined : new Set(shards);
      for (const object of this.primary?.list() ?? []) {
        const request = parseStoreKey(storeKeyOf(object));
        const shard = shardOf(request);
        if (moved ? shard !== undefined && moved.has(shard) : shard === undefined)
          this.queue.add(storeKey(request));
      }
    });
  }

  /** Looks at every object of the primary kind again: this replica just started leading. */
  requeueAll(): void {
    for (const object of this.primary?.list() ?? []) this.queue.add(storeKeyOf(object));
  }

  /** Reconciles each object of the primary kind when it is added, deleted, or updated as `predicate` allows. */
  for<T extends KubernetesObject>(
    informer: SharedInformer<T>,
    predicate: UpdatePredicate = generationChanged,
  ): this {
    this.primary = informer as unknown as SharedInformer<KubernetesObject>;
    return this.watches(informer, (object) => [parseStoreKey(storeKeyOf(object))], predicate);
  }

  /**
   * Reconciles the objects `mapper` names when a dependency is added, deleted, or updated as
   * `predicate` allows; an update enqueues what the object named before it too, so a dependency
   * that moves its reference wakes the object it left.
   */
  watches<D extends KubernetesObject>(
    informer: SharedInformer<D>,
    mapper: Mapper<D>,
    predicate: UpdatePredicate,
  ): this {
    const enqueue = (object: D) => {
      for (const request of mapper(object)) this.queue.add(storeKey(request));
    };
    informer.addHandlers({
      added: enqueue,
      deleted: enqueue,
      updated: (before: D, object: D) => {
        if (!predicate(factsOf(before), factsOf(object))) return;
        enqueue(before);
        enqueue(object);
      },
    });
    return this;
  }

  /** Runs the workers until the queue shuts down. */
  async run(): Promise<void> {
    await Promise.all(Array.from({ length: this.concurrency }, () => this.worker()));
  }

  async stop(): Promise<void> {
    this.stopSharing?.();
    await this.queue.shutDown();
  }

  private async worker(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      const reconcileID = randomUUID();
      const logger = withFields(this.logger, { controller: this.name, object: key, reconcileID });
      const request = parseStoreKey(key);
      try {
        if (this.ownership && !this.ownership.owns(this.shardOf?.(request))) {
          logger.debug("another replica handles it");
          await this.reconciler.disown?.(request, { logger, reconcileID });
          this.queue.forget(key);
          continue;
        }
        logger.debug("reconciling");
        const result = await this.reconciler.reconcile(request, { logger, reconcileID });
        this.queue.forget(key);
        // Most passes ask to be looked at again later, so this is no news: debug, as the start is.
        if (result?.requeueAfterMs !== undefined) {
          logger.debug("reconciled; looking again later", { requeueAfterMs: result.requeueAfterMs });
          this.queue.addAfter(key, result.requeueAfterMs);
        }
      } catch (err) {
        logger.error("reconcile failed; retrying with backoff", {
          attempt: this.queue.numRequeues(key) + 1,
          error: errorText(err),
        });
        this.queue.addRateLimited(key);
      } finally {
        this.queue.done(key);
      }
    }
  }
}
