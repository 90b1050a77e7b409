// One watch per (GitTarget, collection): the only source of object state. Its first connection
// asks for initial events, and everything up to the initial-events-end bookmark is the
// collection's snapshot; then live events follow, in the watch's order. A dropped connection
// resumes from the collection's cursor (cursor.ts); no cursor, or 410 Gone (the history behind
// it was compacted or left the watch cache), starts over with a fresh snapshot.
// An API server that refuses streaming initialization gets the compatibility path instead: the
// watch opens first, without a resourceVersion, and holds its events; then a LIST is the
// snapshot, and the held events newer than the LIST's resourceVersion follow it, in order
// (listfallback.ts). Opening the watch first is what makes every change after the LIST reach
// it; a 410 on that watch, or its end before the LIST answered, starts over.
// A collection another process was following (a replica that died or handed its branch over, or
// this operator before a restart) left its cursor behind: the first connection resumes from it,
// so the changes made meanwhile arrive as live events with their authors, and once that backlog
// is in (a quiet second, ten at most) a fresh snapshot follows and confirms what Git should hold.
// The stored cursor never runs past an event whose item the branch worker has not taken, so an
// edit still waiting for its author when a process dies is read again by the next one. The
// snapshot is the safety net for the rest (a save written behind, a cursor lost). An
// object the snapshot finds newer than the last event the resumed watch delivered changed in
// the instant between the two connections: it goes first as the live event it was, with its
// author, and the snapshot after it changes nothing.
import { Watch, type KubeConfig, type KubernetesObject } from "@kubernetes/client-node";
import { getJson } from "../kube/rawget.ts";
import { AcceptedState } from "../sanitize/accepted.ts";
import { settle, unsettled, type Projection, type Unsettled } from "../sanitize/sanitize.ts";
import type { Logger } from "../telemetry/logger.ts";
import { followedOnlyWhenUnowned, isControllerOwned } from "../typeset/followability.ts";
import { asWatched, newerThanSnapshot } from "./listfallback.ts";
import { deleteItemOf } from "./selectorexit.ts";
import {
  OrderedPush,
  type DesiredObject,
  type GitTargetEventStream,
  type StreamItem,
} from "../stream/stream.ts";
import type { CollectedWhile } from "../types/applied.ts";
import type { ResourceIdentity } from "../types/identity.ts";
import { pathOf, type Collection } from "../stream/collection.ts";
import { backoffDelay, type Backoff } from "../timing/backoff.ts";
import type { Cursor } from "./cursor.ts";
import { withAuthor, type Attributor } from "./attributor.ts";
import { appliedByOf, eventVersion, stampDelete, writersOf } from "./appliedby.ts";
import { LastWrites, type Writer } from "./lastwriter.ts";
import { laterRevision } from "../types/revision.ts";
import { CollectionExclusions, type Judgement } from "./excluder.ts";
import type { ExclusionReason, RuleExclusions } from "../rulestore/exclusions.ts";
import { WatchMeter, type SessionEnd } from "./meter.ts";
import { sleep, untilAborted } from "../timing/sleep.ts";
import { objectKeyOf } from "../types/names.ts";

export type CollectionState = "Replaying" | "Running" | "Blocked";

const initialEventsEnd = "k8s.io/initial-events-end";
/** A takeover's backlog is in once its watch was quiet this long, or at the latest after `takeoverMaxMs`. */
const takeoverQuietMs = 1_000;
const takeoverMaxMs = 10_000;
/** 1 s doubling to 30 s, jittered, so the watches one outage ended do not reconnect together. */
const retryBackoff: Backoff = { baseMs: 1000, maxMs: 30_000, jitter: "equal" };

/** One watch event as the client hands it over; an ERROR's object is a Status with a code. */
type WatchEvent = [phase: string, object: KubernetesObject & { code?: number }];

/** What ended a connection, and where the next one should resume. */
interface Outcome {
  gone: boolean;
  error: (Error & { statusCode?: number }) | undefined;
}

export interface CollectionWatchOptions {
  /** Called when the collection moves between Replaying, Running and Blocked. */
  onStateChange?: () => void;
  /** With attribution on: who made a live change, resolved within the grace window. */
  attributor?: Attributor;
  /** Where a reconnect resumes from; without one, every reconnect initializes. */
  cursor?: Cursor;
  /**
   * Projects an object, leaving out the unowned values it proves server defaults
   * (defaultsprover.ts); without one nothing is proven, and every unowned value is kept.
   */
  projector?: Projector;
  /** What the rule objects that select the collection keep out (rulestore/exclusions.ts). */
  exclusions?: readonly (RuleExclusions | undefined)[];
}

/** The desired-state projection of an object of a collection, at once or once proven. */
export interface Projector {
  project(collection: Collection, object: Unsettled): Projection | Promise<Projection>;
}

export class CollectionWatch {
  private stateValue: CollectionState = "Replaying";
  private blockedReason = "";
  private resourceVersion: string | undefined;
  /** Each object's last write seen, so the next event's writer is known (lastwriter.ts). */
  private lastWrites = new LastWrites();
  private watchListRefused = false;
  private readonly abort = new AbortController();
  /** Ends the current connection only, so the loop initializes again. */
  private connection: AbortController | undefined;
  private resyncRequested = false;
  /** A takeover's confirming snapshot is due: the last resourceVersion its resumed watch delivered. */
  private confirmAfter: string | undefined;
  private running: Promise<void> | undefined;
  /** Every push goes through here, so a delete that reads its object first keeps its place. */
  private readonly out = new OrderedPush((item, resourceVersion) => {
    // Kept out once its user was known: it never enters the stream, so it was never sent.
    if (this.dropped.has(item)) {
      this.sent--;
      this.saveCursor();
      return;
    }
    this.pushed.add(item);
    if (resourceVersion !== undefined) this.versionOf.set(item, resourceVersion);
    this.stream.push(item);
  });
  /** This collection's items in the stream, and the resourceVersion of each event's. */
  private readonly pushed = new WeakSet<StreamItem>();
  private readonly versionOf = new WeakMap<StreamItem, string>();
  /** Items an excluded user's write made, dropped when their turn to be pushed comes. */
  private readonly dropped = new WeakSet<StreamItem>();
  private readonly exclusions: CollectionExclusions;
  /** How many items were sent, and how many of them the branch worker took. */
  private sent = 0;
  private takenCount = 0;
  /** The resourceVersion of the last event whose item the branch worker took. */
  private takenVersion: string | undefined;
  /** The last resourceVersion processed whole: every event up to it read, a snapshot complete. */
  private processedVersion: string | undefined;
  /** Snapshots sent that the branch worker has not taken from the stream yet. */
  private snapshotsOut = 0;
  private readonly stopTaking: () => void;
  private readonly meter: WatchMeter;

  constructor(
    private readonly kubeConfig: KubeConfig,
    readonly collection: Collection,
    private readonly stream: GitTargetEventStream,
    private readonly logger: Logger,
    private readonly options: CollectionWatchOptions = {},
  ) {
    this.meter = new WatchMeter(stream.target, collection);
    this.exclusions = new CollectionExclusions(options.exclusions);
    this.stopTaking = stream.onTaken((item) => {
      if (!this.pushed.has(item)) return;
      this.takenCount++;
      if (item.type === "snapshot") this.snapshotsOut--;
      this.takenVersion = this.versionOf.get(item) ?? this.takenVersion;
      this.saveCursor();
    });
  }

  /** Sends an item into the stream, in order; `resourceVersion` is the event's it came from. */
  private send(item: StreamItem | Promise<StreamItem>, resourceVersion?: string): void {
    this.sent++;
    this.out.send(item, resourceVersion);
  }

  get state(): CollectionState {
    return this.stateValue;
  }

  /** Whether the branch worker has taken every snapshot this watch sent: the barrier's watch side. */
  get snapshotTaken(): boolean {
    return this.snapshotsOut === 0;
  }

  private setState(state: CollectionState, reason = ""): void {
    const changed = state !== this.stateValue;
    this.stateValue = state;
    this.blockedReason = reason;
    if (changed) this.options.onStateChange?.();
  }

  /** Why the collection is Blocked, when it is. */
  get reason(): string {
    return this.blockedReason;
  }

  start(): void {
    this.running ??= this.loop();
  }

  /**
   * Stops: the stream learns the collection is no longer watched. A collection stopped for good
   * forgets its cursor; one whose work moves on (a shutdown, a branch handed to another replica)
   * keeps it for `leaveCursor`, once its stream has been read out.
   */
  async stop(keepCursor = false): Promise<void> {
    if (!this.abort.signal.aborted && this.running) {
      this.send({ type: "removed", collection: this.collection });
    }
    this.abort.abort();
    await this.running;
    this.options.attributor?.release();
    if (keepCursor) return;
    this.stopTaking();
    this.options.cursor?.forget();
  }

  /**
   * Leaves the cursor where the process that follows the collection next should resume: past
   * every event read when the branch worker took every item sent, else at the last event whose
   * item it took, so what was read and not taken (an author still being resolved, an item the
   * closed stream dropped) reaches the next one again. Nothing taken: the cursor goes, and the
   * next one takes a snapshot.
   */
  leaveCursor(): void {
    this.stopTaking();
    const cursor = this.options.cursor;
    const caughtUp = this.takenCount === this.sent ? this.resourceVersion : undefined;
    const at = caughtUp ?? this.takenVersion;
    if (at !== undefined) cursor?.save(at);
    else cursor?.forget();
  }

  /**
   * Takes what a new plan keeps out. Writes are judged by it from the next event on; a change of
   * the objects kept out replays the collection, so an object no longer excluded reaches Git
   * without waiting for its next write.
   */
  exclude(exclusions: readonly (RuleExclusions | undefined)[]): void {
    if (this.exclusions.set(exclusions)) this.resync();
  }

  /** Replays the collection's current state again, as a fresh snapshot. */
  resync(): void {
    this.resyncRequested = true;
    this.connection?.abort();
  }

  private async loop(): Promise<void> {
    let failures = 0;
    // What was last accepted per object, for no-op suppression; a fresh snapshot starts it over.
    let accepted = new AcceptedState();
    let first = true;
    while (!this.abort.signal.aborted) {
      if (!first && this.resourceVersion !== undefined) this.resourceVersion = await this.resumePoint();
      const takeover = first && (this.resourceVersion = await this.takeoverPoint()) !== undefined;
      const initializing = this.resourceVersion === undefined;
      this.meter.started(
        takeover ? "takeover" : first ? "initial" : initializing ? "reinitialize" : "resume",
      );
      first = false;
      if (initializing) {
        this.setState("Replaying");
        // A confirming snapshot says it replays only once what changed after the resumed
        // watch's last event has gone first, as live events: a replay holds what follows it.
        if (this.confirmAfter === undefined) this.send({ type: "replaying", collection: this.collection });
        accepted = new AcceptedState();
        this.lastWrites = new LastWrites();
      }
      // Read just before the watch that delivers the snapshot opens: a snapshot collected while
      // Git was ahead of the cluster, or across an apply, is discarded by the branch worker.
      const collected = initializing ? this.stream.collecting() : undefined;
      const outcome = await this.connect(accepted, initializing, takeover, collected);
      this.meter.ended(this.endOf(outcome));
      if (this.abort.signal.aborted) return;
      if (this.resyncRequested) {
        this.resyncRequested = false;
        if (takeover) this.confirmAfter = this.resourceVersion;
        this.resourceVersion = undefined;
        continue;
      }
      if (this.stream.paused) {
        await Promise.race([this.stream.whenResumed(), untilAborted(this.abort.signal)]);
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
        failures = 0;
        continue;
      }
      const code = outcome.error.statusCode;
      if (initializing && !this.watchListRefused && code !== undefined && [400, 422].includes(code)) {
        this.logger.warn("the API server refused a watch-list; using LIST and watch", {
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
      const delay = backoffDelay(retryBackoff, failures++);
      this.logger.error("watch ended on an error; retrying", {
        collection: this.collection.key,
        error: outcome.error.message,
        retryInMs: delay,
      });
      await sleep(delay, this.abort.signal);
    }
  }

  /** Where a first connection resumes: the cursor a process that followed the collection before left. */
  private async takeoverPoint(): Promise<string | undefined> {
    const stored = await this.options.cursor?.load();
    if (stored !== undefined) {
      this.logger.info("resuming where the collection's last follower stopped; a snapshot follows", {
        collection: this.collection.key,
      });
    }
    return stored;
  }

  /**
   * Where a reconnect resumes: this process's own position, which is past the stored cursor by
   * what the worker has not taken yet (those items are in the stream already). A store that lost
   * the cursor answers with none, and the collection initializes again.
   */
  private async resumePoint(): Promise<string | undefined> {
    const { cursor } = this.options;
    if (!cursor) return undefined;
    const stored = await cursor.load();
    if (stored === undefined) {
      this.logger.info("no resume cursor; initializing again", { collection: this.collection.key });
      return undefined;
    }
    return this.resourceVersion;
  }

  /** Why a connection ended, in the order the loop judges it. */
  private endOf(outcome: Outcome): SessionEnd {
    if (this.abort.signal.aborted) return "stopped";
    if (this.resyncRequested) return "resync";
    if (this.stream.paused) return "paused";
    if (outcome.gone) return "gone";
    return !outcome.error || outcome.error.name === "TimeoutError" ? "timeout" : "error";
  }

  /** A resourceVersion the collection has processed: a reconnect may resume from it. */
  private processed(resourceVersion: string): void {
    this.resourceVersion = resourceVersion;
    this.processedVersion = resourceVersion;
    this.saveCursor();
  }

  /**
   * Stores where the next process to follow the collection resumes (a takeover after a crash, a
   * restart): past every event read once the branch worker took every item sent, else at the
   * last event whose item it took. An item read and not yet in the worker's durable queue (its
   * author still being resolved, say) is lost with a killed process's memory; the next process
   * reads its event again, with its author, instead of finding its value in a snapshot.
   */
  private saveCursor(): void {
    const at = this.takenCount === this.sent ? this.processedVersion : this.takenVersion;
    if (at !== undefined) this.options.cursor?.save(at);
  }

  /** What the connection asks for: initial events, or a resume from the cursor. */
  private watchQuery(initializing: boolean, listFallback: boolean): Record<string, string | boolean> {
    const { labelSelector } = this.collection;
    const query: Record<string, string | boolean> = { allowWatchBookmarks: true };
    if (labelSelector) query.labelSelector = labelSelector;
    if (initializing && !listFallback) {
      Object.assign(query, { sendInitialEvents: true, resourceVersionMatch: "NotOlderThan" });
    }
    // An initializing fallback has none: its watch starts at the most recent resourceVersion.
    if (this.resourceVersion !== undefined) query.resourceVersion = this.resourceVersion;
    return query;
  }

  /** The LIST snapshot of the fallback, as served: see getJson. */
  private list(): Promise<{ items: KubernetesObject[]; metadata: { resourceVersion?: string } }> {
    const { labelSelector } = this.collection;
    return getJson(this.kubeConfig, pathOf(this.collection), labelSelector ? { labelSelector } : {});
  }

  /**
   * One of the initial events of a streamed snapshot, kept in `buffer`; "complete" at the
   * bookmark that ends them. Until then their versions are no cursor: an end before it initializes.
   */
  private initialEvent(
    phase: WatchEvent[0],
    object: KubernetesObject,
    buffer: Map<string, KubernetesObject>,
  ): "pending" | "complete" {
    const rv = object.metadata?.resourceVersion;
    if (rv) this.resourceVersion = rv;
    if (phase === "BOOKMARK" && object.metadata?.annotations?.[initialEventsEnd] === "true")
      return "complete";
    if (phase === "ADDED" || phase === "MODIFIED") buffer.set(objectKeyOf(object), object);
    else if (phase === "DELETED") buffer.delete(objectKeyOf(object));
    return "pending";
  }

  /** One connection, from open to close. */
  private async connect(
    accepted: AcceptedState,
    initializing: boolean,
    takeover = false,
    collected?: CollectedWhile,
  ): Promise<Outcome> {
    const buffer = new Map<string, KubernetesObject>();
    let snapshotPending = initializing;
    // Without streaming initialization the watch opens first and holds its events until the
    // LIST answers; from then on only events newer than the LIST apply (listfallback.ts).
    const listFallback = initializing && this.watchListRefused;
    const held: WatchEvent[] = [];
    let listedAt: string | undefined;
    const query = this.watchQuery(initializing, listFallback);
    const opened = performance.now();

    let gone = false;
    let ended = false;
    return new Promise<Outcome>((resolve) => {
      let controller: AbortController | undefined;
      // An abort (a resync, a stop) can come while the watch is still opening, before there is
      // a controller to abort, or between two connections: it is remembered, and the watch is
      // ended as soon as it opens, so the loop initializes again.
      let abortRequested = this.resyncRequested || this.abort.signal.aborted;
      const onAbort = () => {
        abortRequested = true;
        controller?.abort();
      };
      this.connection = { abort: onAbort } as AbortController;
      this.abort.signal.addEventListener("abort", onAbort, { once: true });
      // A takeover's resumed backlog is followed by a snapshot that confirms it.
      const confirm = takeover ? new Quiet(takeoverQuietMs, takeoverMaxMs, () => this.resync()) : undefined;
      const finish = (error: unknown) => {
        confirm?.cancel();
        ended = true;
        this.abort.signal.removeEventListener("abort", onAbort);
        const e = error as (Error & { statusCode?: number; code?: number }) | null | undefined;
        const status = e?.statusCode ?? e?.code;
        resolve({ gone: gone || status === 410, error: e && status !== 410 ? e : undefined });
      };
      const onEvent = (...[phase, object]: WatchEvent) => {
        if (phase === "ERROR") {
          if (object.code === 410) gone = true;
          return;
        }
        confirm?.touch();
        if (!snapshotPending && this.stream.paused) {
          // The branch takes nothing more: the cursor stays at the last event pushed, and
          // the loop reconnects from it once the stream resumes.
          controller?.abort();
          return;
        }
        if (listFallback) {
          if (snapshotPending) {
            held.push([phase, object]);
            return;
          }
          if (!newerThanSnapshot(object.metadata?.resourceVersion, listedAt)) return;
        }
        const rv = object.metadata?.resourceVersion;
        if (snapshotPending) {
          if (this.initialEvent(phase, object, buffer) === "pending") return;
          this.emitSnapshot(accepted, buffer, rv, collected);
          this.meter.replayed("watchlist", buffer.size, opened);
          snapshotPending = false;
          if (rv) this.processed(rv);
          return;
        }
        if (phase !== "BOOKMARK") this.onLiveEvent(accepted, phase, object);
        if (rv) this.processed(rv);
      };
      const takeListSnapshot = async () => {
        try {
          const list = await this.list();
          if (ended || this.abort.signal.aborted) return;
          for (const item of list.items) buffer.set(objectKeyOf(item), asWatched(item, this.collection));
          this.emitSnapshot(accepted, buffer, list.metadata.resourceVersion, collected);
          this.meter.replayed("list", buffer.size, opened);
          snapshotPending = false;
          listedAt = list.metadata.resourceVersion;
          if (listedAt) this.processed(listedAt);
          for (const event of held.splice(0)) onEvent(...event);
        } catch (err) {
          finish(err);
          controller?.abort();
        }
      };
      new Watch(this.kubeConfig).watch(pathOf(this.collection), query, onEvent, finish).then((c) => {
        controller = c;
        confirm?.start();
        if (abortRequested) c.abort();
        // The watch is open, so every change after the LIST's resourceVersion reaches it.
        else if (listFallback && !ended) void takeListSnapshot();
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

  private emitSnapshot(
    accepted: AcceptedState,
    buffer: Map<string, KubernetesObject>,
    resourceVersion: string | undefined,
    collected: CollectedWhile | undefined,
  ): void {
    const after = this.confirmAfter;
    this.confirmAfter = undefined;
    if (after !== undefined) {
      // Found by a list, not in the watch's order: no previous event of theirs is at hand.
      for (const object of buffer.values())
        if (laterRevision(object.metadata?.resourceVersion, after))
          this.onLiveEvent(accepted, "MODIFIED", object);
      this.send({ type: "replaying", collection: this.collection });
    }
    const ready: DesiredObject[] = [];
    const proving: Promise<void>[] = [];
    // Objects excludeObjects keeps out: present, so the sweep leaves their documents alone.
    const kept: string[] = [];
    for (const [key, object] of buffer) {
      this.lastWrites.record(key, object);
      // A terminating object is being deleted: deletion is its desired state.
      if (object.metadata?.deletionTimestamp || !this.followed(object)) continue;
      if (this.exclusions.object(object)) {
        kept.push(key);
        continue;
      }
      const pending = unsettled(object);
      const digest = accepted.accept(key, pending.stripped, pending.unowned);
      const identity = this.identityOf(object);
      const desired = (projection: Projection): DesiredObject => ({
        identity,
        ...projection,
        ...digestOf(pending, digest),
        ...appliedByOf(object),
      });
      const projection = this.project(pending);
      if (!(projection instanceof Promise)) ready.push(desired(projection));
      else proving.push(projection.then((proven) => void ready.push(desired(proven))));
    }
    const snapshot = () =>
      ({
        type: "snapshot",
        collection: this.collection,
        objects: ready,
        ...(kept.length > 0 ? { kept } : {}),
        ...(collected ? { collected } : {}),
      }) as const;
    this.meter.keptOut(kept.length);
    // A snapshot's order means nothing (it is a set): proven objects join it as they come.
    this.snapshotsOut++;
    this.send(proving.length > 0 ? Promise.all(proving).then(snapshot) : snapshot(), resourceVersion);
    this.setState("Running");
  }

  /** Settled after no-op suppression read `pending`: settling may change it. */
  private project(pending: Unsettled): Projection | Promise<Projection> {
    return this.options.projector?.project(this.collection, pending) ?? settle(pending);
  }

  private onLiveEvent(accepted: AcceptedState, phase: string, object: KubernetesObject): void {
    const arrived = performance.now();
    if (!this.followed(object)) return this.meter.event(phase, "ignored");
    const key = objectKeyOf(object);
    // Never mirrored: not its writes, nor its delete. Nothing of it is accepted or remembered.
    if (this.exclusions.object(object)) return this.keepOut(phase, key, "object");
    if (phase === "DELETED" || object.metadata?.deletionTimestamp) {
      // Deletion intent arrives first as the deletionTimestamp, then as DELETED: send it once.
      this.lastWrites.forget(key);
      if (!accepted.has(key)) return this.meter.event(phase, "noop");
      accepted.forget(key);
      this.meter.event(phase, "routed");
      this.logger.debug("watch event routed", { collection: this.collection.key, phase, object: key });
      const identity = this.identityOf(object);
      // A terminating object is deleted; a DELETED may also be the object leaving the selector.
      const item =
        phase === "DELETED"
          ? deleteItemOf(this.kubeConfig, this.collection, identity, this.logger)
          : ({ type: "delete", collection: this.collection, identity } as const);
      this.send(
        this.meter.handled(
          withAuthor(this.options.attributor, stampDelete(item, object), object, true),
          arrived,
        ),
        object.metadata?.resourceVersion,
      );
      return;
    }
    // No-op suppression compares the object without what stripRules name and what no manager
    // owns in it. The projection is a function of the two, so equal content is a no-op whether
    // or not its proof has been answered yet, and the comparison is made in the watch's order.
    // Every write is the predecessor of the next, a no-op's included.
    const writer = this.lastWrites.observe(key, object);
    const pending = unsettled(object);
    const digest = accepted.acceptIfChanged(key, pending.stripped, pending.unowned);
    if (digest === undefined) {
      this.logger.debug("watch event dropped: no desired-state change", {
        collection: this.collection.key,
        phase,
        object: key,
      });
      return this.meter.event(phase, "noop");
    }
    // An excluded write is taken as seen, so it is no change for the writes after it; the next
    // one that is not excluded mirrors the object as it then is, this write's change included.
    const judgement = this.exclusions.judge(object, writer);
    if (judgement?.reason) return this.keepOut(phase, key, judgement.reason, writer);
    // Its user could still keep it out: it is counted once attribution named the user.
    const askUser = this.options.attributor !== undefined && judgement?.askUser === true;
    if (!askUser) {
      this.meter.event(phase, "routed");
      this.logger.debug("watch event routed", { collection: this.collection.key, phase, object: key });
    }
    const identity = this.identityOf(object);
    const upsert = (projection: Projection): StreamItem => ({
      type: "upsert",
      collection: this.collection,
      identity,
      ...projection,
      ...digestOf(pending, digest),
      ...appliedByOf(object),
      ...writersOf(object, writer),
      ...eventVersion(object),
    });
    // The author is asked now, whether or not the projection waits for its proof.
    const projection = this.project(pending);
    const item = projection instanceof Promise ? projection.then(upsert) : upsert(projection);
    const authored = withAuthor(this.options.attributor, item, object, false);
    this.send(
      this.meter.handled(askUser ? this.judgedByUser(authored, phase, key, judgement) : authored, arrived),
      object.metadata?.resourceVersion,
    );
  }

  /** A live event a rule's exclusions kept out: counted, and never sent. */
  private keepOut(phase: string, key: string, reason: ExclusionReason, writer?: Writer): void {
    this.meter.excluded(phase, reason);
    this.logger.debug("watch event excluded", {
      collection: this.collection.key,
      phase,
      object: key,
      reason,
      ...(writer && "known" in writer ? { writer: writer.known } : {}),
    });
  }

  /** The item, unless its user (attribution's answer) keeps it out: then it is dropped in its turn. */
  private async judgedByUser(
    item: StreamItem | Promise<StreamItem>,
    phase: string,
    key: string,
    judgement: Judgement,
  ): Promise<StreamItem> {
    const ready = await item;
    const author = ready.type === "upsert" ? ready.author : undefined;
    const reason = judgement.withUser(author?.kind === "none" ? undefined : author?.username);
    if (!reason) {
      this.meter.event(phase, "routed");
      this.logger.debug("watch event routed", { collection: this.collection.key, phase, object: key });
      return ready;
    }
    this.keepOut(phase, key, reason);
    this.dropped.add(ready);
    return ready;
  }
}

/**
 * The content digest the writer compares a document with: the one no-op suppression took of
 * the stripped object, which is the projection when nothing is unowned. A projection that left
 * proven defaults out is another object; the writer takes its digest when it needs it.
 */
function digestOf(pending: Unsettled, digest: string): { digest?: string } {
  return pending.unowned ? {} : { digest };
}

/** Calls `done` once nothing touched it for `quietMs`, or `maxMs` after it started, whichever is first. */
class Quiet {
  private quiet: NodeJS.Timeout | undefined;
  private max: NodeJS.Timeout | undefined;

  constructor(
    private readonly quietMs: number,
    private readonly maxMs: number,
    private readonly done: () => void,
  ) {}

  start(): void {
    this.max = setTimeout(() => this.fire(), this.maxMs);
    this.touch();
  }

  touch(): void {
    if (!this.max) return;
    clearTimeout(this.quiet);
    this.quiet = setTimeout(() => this.fire(), this.quietMs);
  }

  cancel(): void {
    clearTimeout(this.quiet);
    clearTimeout(this.max);
    this.max = undefined;
  }

  private fire(): void {
    this.cancel();
    this.done();
  }
}
