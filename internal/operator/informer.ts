import { ListWatch, Watch, type KubeConfig, type KubernetesObject } from "@kubernetes/client-node";
import type { InformerSource } from "../kube/sources.ts";
import type { Logger } from "../telemetry/logger.ts";
import { backoffDelay, type Backoff } from "../timing/backoff.ts";
import { storeKeyOf } from "../types/names.ts";
import { statusCodeOf } from "../kube/resourceclient.ts";
import { errorText } from "../telemetry/errortext.ts";

export interface InformerHandlers<T extends KubernetesObject> {
  added?: (object: T) => void;
  updated?: (before: T, object: T) => void;
  deleted?: (object: T) => void;
}

/** 500 ms doubling to 30 s, jittered, so informers an outage stopped together do not restart together. */
const restartBackoff: Backoff = { baseMs: 500, maxMs: 30_000, jitter: "equal" };

/**
 * A cache of one resource collection, shared by every controller that reads it: client-node's
 * list-and-watch informer, plus what it lacks. It restarts itself with backoff after an error
 * (client-node's stops), reports an update together with the object before it (client-node's
 * store has already replaced it), so predicates and mappers can compare, and says when its cache
 * first holds a complete list.
 */
export class SharedInformer<T extends KubernetesObject> {
  private readonly informer: ListWatch<T>;
  /** The object as last reported, per key: the same objects the store holds, no copies. */
  private readonly last = new Map<string, T>();
  private readonly handlers: InformerHandlers<T>[] = [];
  private stopped = true;
  private restartTimer: NodeJS.Timeout | undefined;
  /** An expected retry was logged once, and the informer has not listed since. */
  private waiting = false;
  /** Restarts since the cache last held a complete list. */
  private restarts = 0;
  private syncedResolve!: () => void;
  /** Resolves once the cache holds a complete list. */
  readonly synced: Promise<void> = new Promise((resolve) => (this.syncedResolve = resolve));

  constructor(
    kubeConfig: KubeConfig,
    readonly source: InformerSource<T>,
    private readonly logger: Logger,
  ) {
    this.informer = new ListWatch(source.path, new Watch(kubeConfig), source.list, false);
    this.informer.on("add", (object) => {
      this.last.set(storeKeyOf(object), object);
      for (const h of this.handlers) h.added?.(object);
    });
    this.informer.on("update", (object) => {
      const key = storeKeyOf(object);
      const before = this.last.get(key) ?? object;
      this.last.set(key, object);
      for (const h of this.handlers) h.updated?.(before, object);
    });
    this.informer.on("delete", (object) => {
      this.last.delete(storeKeyOf(object));
      for (const h of this.handlers) h.deleted?.(object);
    });
    this.informer.on("error", (err: unknown) => this.scheduleRestart(err));
  }

  addHandlers(handlers: InformerHandlers<T>): void {
    this.handlers.push(handlers);
  }

  get(name: string, namespace?: string): T | undefined {
    return this.informer.get(name, namespace);
  }

  list(namespace?: string): readonly T[] {
    return this.informer.list(namespace);
  }

  async start(): Promise<void> {
    this.stopped = false;
    await this.informer.start();
    this.markSyncedIfListed();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.restartTimer);
    await this.informer.stop();
  }

  private markSyncedIfListed(): void {
    if (this.informer.latestResourceVersion()) {
      this.restarts = 0;
      this.waiting = false;
      this.syncedResolve();
    }
  }

  private scheduleRestart(err: unknown): void {
    if (this.stopped) return;
    if (!expectedRetry(err)) {
      this.logger.error("informer stopped; restarting", { path: this.source.path, error: errorText(err) });
    } else if (!this.waiting) {
      // The API server's normal state right after a CRD is installed: said once, not as a fault.
      this.waiting = true;
      this.logger.info("informer waiting for the API server to serve its kind", {
        path: this.source.path,
        error: errorText(err),
      });
    }
    clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(
      () => {
        if (this.stopped) return;
        this.informer.start().then(
          () => this.markSyncedIfListed(),
          (e: unknown) => this.scheduleRestart(e),
        );
      },
      backoffDelay(restartBackoff, this.restarts++),
    );
  }
}

/**
 * An error the API server gives while it starts serving a kind (its watch cache initializing
 * right after the CRD is installed, or a 429/503 it answers meanwhile): a retry the runtime
 * expects, never a fault to report as one.
 */
export function expectedRetry(err: unknown): boolean {
  const code = statusCodeOf(err);
  return code === 429 || code === 503 || /storage is \(re\)initializing/.test(errorText(err));
}
