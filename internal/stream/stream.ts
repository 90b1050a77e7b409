// The one seam between the watch and Git: a GitTarget's ordered stream of desired state.
// Who pushes: each collection's watch (internal/watch/collectionwatch.ts), through the stream
// its WatchManager made for the GitTarget (`streamFor`), pushes a replaying marker, the
// snapshot, then one upsert or delete per live event, in the watch's order. Who reads: the
// branch worker of the GitTarget's GitBranch, through a reader (internal/git/streamreaders.ts)
// that hands each item to the worker and reports it taken, so the watch saves its resume cursor
// only past what Git's side keeps. Where the two are joined: the GitTarget reconciler
// (controllers/gittarget.ts) takes the stream from the source context and attaches it to the
// branch's worker (`WorkerManager.attach`); a detach parks the reader, and a release reads the
// stream out before the watch lets it go. Nothing else passes between the two halves.
import type { KubernetesObject } from "@kubernetes/client-node";
import type { Defaulted } from "../sanitize/owned.ts";
import type { AppliedBy, CollectedWhile, FieldsEntry } from "../types/applied.ts";
import type { ResourceIdentity } from "../types/identity.ts";
import type { Author } from "../types/signature.ts";
import type { Collection } from "./collection.ts";

export interface DesiredObject {
  identity: ResourceIdentity;
  /** The sanitized desired state. */
  object: KubernetesObject;
  /** The fields the API server defaulted, left out of `object`: kept only where Git sets them. */
  defaulted?: Defaulted;
  /**
   * The content digest of `object`, as the watch took it for no-op suppression: the writer
   * compares it with the document's and reads nothing when they agree.
   */
  digest?: string;
  /** The applier whose marks the live object carries (Flux's owner labels, Argo CD's tracking id). */
  appliedBy?: AppliedBy;
}

/**
 * What a GitTarget's branch worker receives, in order: that a collection began replaying its
 * current state, that complete state (after a watch initialized), one object's upsert or
 * delete, or that the collection is no longer watched. The render-vs-live gate follows the
 * replaying and removed markers.
 */
export type StreamItem =
  | { type: "replaying"; collection: Collection }
  | { type: "removed"; collection: Collection }
  | {
      type: "snapshot";
      collection: Collection;
      objects: DesiredObject[];
      /** Keys of objects observed but kept out (another applier's): present, so never swept. */
      kept?: string[];
      /** What the branch worker said when the collection started: whether Git was ahead, at which apply epoch. */
      collected?: CollectedWhile;
    }
  | ({
      type: "upsert";
      collection: Collection;
      author?: Author;
      /** Who wrote the live object and when (its managedFields), for the apply window. */
      writers?: FieldsEntry[];
      /** The manager that made this write, where the watch's order proved it (watch/lastwriter.ts). */
      writer?: string;
      /** The event's resourceVersion: a watch resumed from a cursor delivers an event again. */
      resourceVersion?: string;
    } & DesiredObject)
  | {
      type: "delete";
      collection: Collection;
      identity: ResourceIdentity;
      exited?: SelectorExit;
      author?: Author;
      appliedBy?: AppliedBy;
      /** The event's resourceVersion: a watch resumed from a cursor delivers an event again. */
      resourceVersion?: string;
    };

/**
 * A delete of an object that still exists: it left the collection because its labels stopped
 * matching the selector, and these are its labels now, which another collection may select.
 */
export interface SelectorExit {
  labels: Record<string, string>;
}

/** An item about objects, as opposed to a marker of a collection's replay. */
export type ObjectItem = Extract<StreamItem, { type: "snapshot" | "upsert" | "delete" }>;

/**
 * One collection's pushes, in its own order, when an item has to wait for a read first: a pushed
 * promise holds back every item pushed after it until it settles.
 */
export class OrderedPush {
  private tail: Promise<void> | undefined;

  constructor(private readonly push: (item: StreamItem, resourceVersion?: string) => void) {}

  /** Pushes `item` once it and every item sent before it are ready; `resourceVersion` is its event's. */
  send(item: StreamItem | Promise<StreamItem>, resourceVersion?: string): void {
    if (!this.tail && !(item instanceof Promise)) {
      this.push(item, resourceVersion);
      return;
    }
    const tail: Promise<void> = (this.tail ?? Promise.resolve())
      .then(() => item)
      .then((ready) => this.push(ready, resourceVersion))
      .finally(() => {
        if (this.tail === tail) this.tail = undefined;
      });
    this.tail = tail;
  }
}

/** Where a stream's reader is: parked (detached, holding nothing) or holding an item while detached. */
export type ReaderAt = "none" | "parked" | "holding" | "replay" | "intake" | "next" | "accept" | "done";

/** A reader waiting for its target to be attached again: it hands nothing to a worker meanwhile. */
const detached = (at: ReaderAt) => at === "parked" || at === "holding";

/**
 * The ordered stream of one GitTarget's items. Each collection's watch pushes in its own order;
 * the stream keeps arrival order across collections. Consumers read with next() or for await.
 */
export class GitTargetEventStream implements AsyncIterable<StreamItem> {
  private readonly items: StreamItem[] = [];
  private readonly readers: ((item: IteratorResult<StreamItem, undefined>) => void)[] = [];
  private closed = false;
  private resumers: (() => void)[] | undefined;
  private readonly takenListeners = new Set<(item: StreamItem) => void>();
  /** Resolved once the stream is closed and its reader has read it out. */
  private readOut: (() => void) | undefined;
  private readonly whenReadOut = new Promise<void>((resolve) => (this.readOut = resolve));

  /**
   * What the branch worker this stream feeds says when a collection's snapshot starts (the apply
   * epoch, whether Git is ahead), stamped on the snapshot; the worker manager sets it on attach.
   */
  collecting: () => CollectedWhile | undefined = () => undefined;

  /** Where its reader is (set by the reader), for a release that waits for it to read out. */
  private reader: ReaderAt = "none";

  constructor(readonly target: { namespace: string; name: string }) {}

  /** Calls `listener` with each item its reader has handed to the branch worker, until the returned function is called. */
  onTaken(listener: (item: StreamItem) => void): () => void {
    this.takenListeners.add(listener);
    return () => this.takenListeners.delete(listener);
  }

  /** The reader handed `item` to the branch worker, which keeps it (or dropped it on purpose). */
  taken(item: StreamItem): void {
    for (const listener of this.takenListeners) listener(item);
  }

  /** Where the reader is now (the debug log of a handover names it). */
  get readerAt(): ReaderAt {
    return this.reader;
  }

  /**
   * The reader says where it is. One waiting for its target to be attached again (parked, or
   * holding an item it took) hands nothing more to a worker from a closed stream: the stream is
   * read out as far as it will be, and what is queued or held, never taken, is read again from
   * the cursors, which stay at the last item taken.
   */
  readerMovedTo(at: ReaderAt): void {
    this.reader = at;
    if (detached(at) && this.closed) this.readOut?.();
  }

  /**
   * Resolves true once the closed stream's reader has taken everything queued, or false after
   * `timeoutMs` (a stream nobody reads, its target detached).
   */
  async readOutWithin(timeoutMs: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const readOut = await Promise.race([
      this.whenReadOut.then(() => true),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs))),
    ]);
    clearTimeout(timer);
    return readOut;
  }

  get pending(): number {
    return this.items.length;
  }

  push(item: StreamItem): void {
    if (this.closed) return;
    const reader = this.readers.shift();
    if (reader) reader({ value: item, done: false });
    else this.items.push(item);
  }

  next(): Promise<IteratorResult<StreamItem, undefined>> {
    const item = this.items.shift();
    if (item) return Promise.resolve({ value: item, done: false });
    if (this.closed) {
      this.readOut?.();
      return Promise.resolve({ value: undefined, done: true });
    }
    return new Promise((resolve) => this.readers.push(resolve));
  }

  /** Ends the stream; readers get what is queued, then done. */
  close(): void {
    this.closed = true;
    // A reader waiting for an item is done now: nothing is queued, so the stream is read out.
    const waiting = this.readers.splice(0);
    for (const reader of waiting) reader({ value: undefined, done: true });
    if (waiting.length > 0 || detached(this.reader)) this.readOut?.();
    this.resume();
  }

  /**
   * Asks the watches feeding this stream to stop reading: the branch's budget is spent. A watch
   * that sees this leaves its cursor at the last event it pushed, and waits to be woken.
   */
  pause(): void {
    this.resumers ??= [];
  }

  resume(): void {
    const resumers = this.resumers;
    this.resumers = undefined;
    for (const resolve of resumers ?? []) resolve();
  }

  get paused(): boolean {
    return this.resumers !== undefined;
  }

  /** Resolves once the stream is not paused. */
  whenResumed(): Promise<void> {
    const resumers = this.resumers;
    if (!resumers) return Promise.resolve();
    return new Promise((resolve) => resumers.push(resolve));
  }

  [Symbol.asyncIterator](): AsyncIterator<StreamItem, undefined> {
    return { next: () => this.next() };
  }
}
