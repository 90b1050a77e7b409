// One watch per (GitTarget, collection): the only source of object state. Its first connection
// asks for initial events, and everything up to the initial-events-end bookmark is the
// collection's snapshot; then live events follow, in the watch's order. A dropped connection
// resumes from the last resourceVersion; 410 Gone starts over with a fresh snapshot.
import { Watch, type KubeConfig, type KubernetesObject } from "@kubernetes/client-node";
import { getJson } from "../kube/rawget.ts";
import { AcceptedState } from "../sanitize/accepted.ts";
import { sanitize } from "../sanitize/sanitize.ts";
import type { Logger } from "../operator/informer.ts";
import { followedOnlyWhenUnowned, isControllerOwned } from "../typeset/followability.ts";
import type { DesiredObject, GitTargetEventStream, ResourceIdentity } from "./stream.ts";
import type { Collection } from "./watchedtypes.ts";
import { sleep } from "../timing/sleep.ts";

export type CollectionState = "Replaying" | "Running" | "Blocked";

const initialEventsEnd = "k8s.io/initial-events-end";
const backoff = { baseMs: 1000, maxMs: 30_000 };

export function collectionPath(c: Collection): string {
  const prefix = c.group === "" ? `/api/${c.version}` : `/apis/${c.group}/${c.version}`;
  return c.namespace ? `${prefix}/namespaces/${c.namespace}/${c.resource}` : `${prefix}/${c.resource}`;
}

function objectKeyOf(object: KubernetesObject): string {
  return `${object.metadata?.namespace ?? ""}/${object.metadata?.name ?? ""}`;
}

/** What ended a connection, and where the next one should resume. */
interface Outcome {
  gone: boolean;
  error: (Error & { statusCode?: number }) | undefined;
}

export class CollectionWatch {
  private stateValue: CollectionState = "Replaying";
  private blockedReason = "";
  private resourceVersion: string | undefined;
  private watchListRefused = false;
  private readonly abort = new AbortController();
  /** Ends the current connection only, so the loop initializes again. */
  private connection: AbortController | undefined;
  private resyncRequested = false;
  private running: Promise<void> | undefined;

  constructor(
    private readonly kubeConfig: KubeConfig,
    readonly collection: Collection,
    private readonly stream: GitTargetEventStream,
    private readonly logger: Logger,
    /** Called when the collection moves between Replaying, Running and Blocked. */
    private readonly onStateChange: () => void = () => undefined,
  ) {}

  get state(): CollectionState {
    return this.stateValue;
  }

  private setState(state: CollectionState, reason = ""): void {
    const changed = state !== this.stateValue;
    this.stateValue = state;
    this.blockedReason = reason;
    if (changed) this.onStateChange();
  }

  /** Why the collection is Blocked, when it is. */
  get reason(): string {
    return this.blockedReason;
  }

  start(): void {
    this.running ??= this.loop();
  }

  /** Stops for good: the stream learns the collection is no longer watched. */
  async stop(): Promise<void> {
    if (!this.abort.signal.aborted && this.running) {
      this.stream.push({ type: "removed", collection: this.collection });
    }
    this.abort.abort();
    await this.running;
  }

  /** Replays the collection's current state again, as a fresh snapshot. */
  resync(): void {
    this.resyncRequested = true;
    this.connection?.abort();
  }

  private async loop(): Promise<void> {
    let delay = backoff.baseMs;
    // What was last accepted per object, for no-op suppression; a fresh snapshot starts it over.
    let accepted = new AcceptedState();
    while (!this.abort.signal.aborted) {
      const initializing = this.resourceVersion === undefined;
      if (initializing) {
        this.setState("Replaying");
        this.stream.push({ type: "replaying", collection: this.collection });
        accepted = new AcceptedState();
      }
      const outcome = await this.connect(accepted, initializing);
      if (this.abort.signal.aborted) return;
      if (this.resyncRequested) {
        this.resyncRequested = false;
        this.resourceVersion = undefined;
        continue;
      }
      if (this.stream.paused) {
        await Promise.race([
          this.stream.whenResumed(),
          new Promise((resolve) => this.abort.signal.addEventListener("abort", resolve, { once: true })),
        ]);
        continue;
      }
      if (outcome.gone) {
        this.logger.info("watch history expired; initializing again", { collection: this.collection.key });
        this.resourceVersion = undefined;
        continue;
      }
      // A quiet watch that reached the client's inactivity timeout simply reconnects from where
      // it was: no error, no backoff.
      if (!outcome.error || outcome.error.name === "TimeoutError") {
        delay = backoff.baseMs;
        continue;
      }
      const code = outcome.error.statusCode;
      if (initializing && !this.watchListRefused && code !== undefined && [400, 422].includes(code)) {
        this.logger.info("the API server refused a watch-list; using LIST and watch", {
          collection: this.collection.key,
        });
        this.watchListRefused = true;
        continue;
      }
      if (code === 403 || code === 404) {
        this.setState(
          "Blocked",
          code === 403
            ? "the source credential may not list and watch it"
            : "the API server no longer serves it",
        );
      }
      this.logger.error("watch ended on an error; retrying", {
        collection: this.collection.key,
        error: outcome.error.message,
        retryInMs: delay,
      });
      await sleep(delay, this.abort.signal);
      delay = Math.min(delay * 2, backoff.maxMs);
    }
  }

  /** One connection, from open to close. */
  private async connect(accepted: AcceptedState, initializing: boolean): Promise<Outcome> {
    const buffer = new Map<string, KubernetesObject>();
    let snapshotPending = initializing;
    const { labelSelector } = this.collection;
    const query: Record<string, string | boolean> = { allowWatchBookmarks: true };
    if (labelSelector) query.labelSelector = labelSelector;

    if (initializing && this.watchListRefused) {
      // LIST, then watch from the list's resourceVersion: the watch replays every change after it.
      try {
        const list = await getJson<{ items: KubernetesObject[]; metadata: { resourceVersion: string } }>(
          this.kubeConfig,
          collectionPath(this.collection),
          labelSelector ? { labelSelector } : {},
        );
        for (const item of list.items) buffer.set(objectKeyOf(item), item);
        this.emitSnapshot(accepted, buffer);
        snapshotPending = false;
        this.resourceVersion = list.metadata.resourceVersion;
      } catch (err) {
        return { gone: false, error: err as Error & { statusCode?: number } };
      }
    } else if (initializing) {
      Object.assign(query, { sendInitialEvents: true, resourceVersionMatch: "NotOlderThan" });
    }
    if (this.resourceVersion !== undefined) query.resourceVersion = this.resourceVersion;

    let gone = false;
    return new Promise<Outcome>((resolve) => {
      let controller: AbortController | undefined;
      const onAbort = () => controller?.abort();
      this.connection = { abort: onAbort } as AbortController;
      this.abort.signal.addEventListener("abort", onAbort, { once: true });
      const finish = (error: unknown) => {
        this.abort.signal.removeEventListener("abort", onAbort);
        const e = error as (Error & { statusCode?: number; code?: number }) | null | undefined;
        const status = e?.statusCode ?? e?.code;
        resolve({ gone: gone || status === 410, error: e && status !== 410 ? e : undefined });
      };
      new Watch(this.kubeConfig)
        .watch(
          collectionPath(this.collection),
          query,
          (phase: string, object: KubernetesObject & { code?: number }) => {
            if (phase === "ERROR") {
              if (object.code === 410) gone = true;
              return;
            }
            if (!snapshotPending && this.stream.paused) {
              // The branch takes nothing more: the cursor stays at the last event pushed, and
              // the loop reconnects from it once the stream resumes.
              controller?.abort();
              return;
            }
            if (object.metadata?.resourceVersion) this.resourceVersion = object.metadata.resourceVersion;
            if (snapshotPending) {
              if (phase === "BOOKMARK" && object.metadata?.annotations?.[initialEventsEnd] === "true") {
                this.emitSnapshot(accepted, buffer);
                snapshotPending = false;
              } else if (phase === "ADDED" || phase === "MODIFIED") {
                buffer.set(objectKeyOf(object), object);
              } else if (phase === "DELETED") {
                buffer.delete(objectKeyOf(object));
              }
              return;
            }
            if (phase !== "BOOKMARK") this.onLiveEvent(accepted, phase, object);
          },
          finish,
        )
        .then((c) => {
          controller = c;
          if (this.abort.signal.aborted) c.abort();
        }, finish);
    }).then((outcome) => {
      // A connection that ended before its snapshot completed must initialize again.
      if (snapshotPending && !outcome.gone) this.resourceVersion = undefined;
      return outcome;
    });
  }

  private identityOf(object: KubernetesObject): ResourceIdentity {
    const { group, version, resource, kind } = this.collection;
    return {
      group,
      version,
      resource,
      kind,
      namespace: object.metadata?.namespace ?? "",
      name: object.metadata?.name ?? "",
      uid: object.metadata?.uid ?? "",
    };
  }

  /** Another controller's output is not desired state: its owner is what Git holds. */
  private followed(object: KubernetesObject): boolean {
    const { group, resource } = this.collection;
    return !(followedOnlyWhenUnowned.has(`${group}/${resource}`) && isControllerOwned(object));
  }

  private emitSnapshot(accepted: AcceptedState, buffer: Map<string, KubernetesObject>): void {
    const objects: DesiredObject[] = [];
    for (const [key, object] of buffer) {
      // A terminating object is being deleted: deletion is its desired state.
      if (object.metadata?.deletionTimestamp || !this.followed(object)) continue;
      const sanitized = sanitize(object);
      accepted.accept(key, sanitized);
      objects.push({ identity: this.identityOf(object), object: sanitized });
    }
    this.stream.push({ type: "snapshot", collection: this.collection, objects });
    this.setState("Running");
  }

  private onLiveEvent(accepted: AcceptedState, phase: string, object: KubernetesObject): void {
    if (!this.followed(object)) return;
    const key = objectKeyOf(object);
    if (phase === "DELETED" || object.metadata?.deletionTimestamp) {
      // Deletion intent arrives first as the deletionTimestamp, then as DELETED: send it once.
      if (!accepted.has(key)) return;
      accepted.forget(key);
      this.stream.push({ type: "delete", collection: this.collection, identity: this.identityOf(object) });
      return;
    }
    const sanitized = sanitize(object);
    if (!accepted.acceptIfChanged(key, sanitized)) return;
    this.stream.push({
      type: "upsert",
      collection: this.collection,
      identity: this.identityOf(object),
      object: sanitized,
    });
  }
}
