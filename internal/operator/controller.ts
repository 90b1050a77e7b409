import { randomUUID } from "node:crypto";
import type { KubernetesObject } from "@kubernetes/client-node";
import { type SharedInformer } from "./informer.ts";
import { storeKeyOf, parseStoreKey, storeKey } from "../types/names.ts";
import { withFields, type Logger } from "../telemetry/logger.ts";
import { factsOf, generationChanged, type UpdatePredicate } from "./predicates.ts";
import { WorkQueue } from "./workqueue.ts";
import type { RateLimiter } from "./ratelimiter.ts";

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
}

/**
 * One reconciler behind a work queue: the primary kind's changes and its dependencies' changes
 * become keys, and `concurrency` workers reconcile them, one key at a time each.
 */
export class Controller {
  readonly queue: WorkQueue;
  private readonly concurrency: number;
  readonly everyReplica: boolean;

  constructor(
    readonly name: string,
    private readonly reconciler: Reconciler,
    private readonly logger: Logger,
    options: ControllerOptions = {},
  ) {
    this.queue = new WorkQueue(options.rateLimiter);
    this.concurrency = options.concurrency ?? 1;
    this.everyReplica = options.everyReplica ?? false;
  }

  /** Reconciles each object of the primary kind when it is added, deleted, or updated as `predicate` allows. */
  for<T extends KubernetesObject>(
    informer: SharedInformer<T>,
    predicate: UpdatePredicate = generationChanged,
  ): this {
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
    await this.queue.shutDown();
  }

  private async worker(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      const reconcileID = randomUUID();
      const logger = withFields(this.logger, { controller: this.name, object: key, reconcileID });
      logger.debug("reconciling");
      try {
        const result = await this.reconciler.reconcile(parseStoreKey(key), { logger, reconcileID });
        this.queue.forget(key);
        // Most passes ask to be looked at again later, so this is no news: debug, as the start is.
        if (result?.requeueAfterMs !== undefined) {
          logger.debug("reconciled; looking again later", { requeueAfterMs: result.requeueAfterMs });
          this.queue.addAfter(key, result.requeueAfterMs);
        }
      } catch (err) {
        logger.error("reconcile failed; retrying with backoff", {
          attempt: this.queue.numRequeues(key) + 1,
          error: err instanceof Error ? err.message : String(err),
        });
        this.queue.addRateLimited(key);
      } finally {
        this.queue.done(key);
      }
    }
  }
}
