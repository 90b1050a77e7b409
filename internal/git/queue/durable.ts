// A branch worker's durable write queue (architecture.md § High availability): every live write
// the worker accepts is appended to its branch's log before the worker takes it, with its author,
// and the log is trimmed only to the oldest entry the worker still holds anywhere (its queue, a
// gate, a suspension, the open window, the writes retained for a push). A process that takes the
// branch over, or the same one after a crash, replays a GitTarget's entries before anything its
// stream sends, so no accepted write and no author is lost with the process's memory.
//
// What "held" means is asked of the worker, not tracked here: an entry the worker no longer holds
// was published, or dropped on purpose (an applier's echo, a suspended target's edit, a write the
// render gate refused), and a replay must not bring it back. An append still in flight has no id
// yet, but it will be newer than every id known when it was sent, so the trim stays before that.
//
// The log away costs durability, never progress: an append that fails is reported
// (DurableQueueUnavailable) and the write goes on from memory, as it did before the queue. A
// log that refuses this worker because another holds it now (LogFenced: the process lost the
// branch) is no outage: it is said once, and the worker writes nothing more to it.
import type { Logger } from "../../telemetry/logger.ts";
import type { StreamItem } from "../../stream/stream.ts";
import { Backlog } from "./backlog.ts";
import {
  decodeEntry,
  durableItem,
  encodeEntry,
  eventOf,
  replayedValues,
  type QueueEntry,
} from "./entries.ts";
import type { Replayed } from "../folder/writes.ts";
import { compareIds, idAfter, newestId, oldestId } from "./entryids.ts";
import { LogFenced, type LogEntry, type WriteLog } from "./writelog.ts";
import { within } from "../../timing/deadline.ts";
import { laterRevision, orderable } from "../../types/revision.ts";

/** One event of one object, as replayedEvents keeps it. */
const eventKey = (event: { object: string; version: string }) => `${event.object} ${event.version}`;

/** Whether the queue keeps the branch's writes now, for the GitBranch's DurableQueue condition. */
export type QueueState = { available: true } | { available: false; error: string; since: Date };

/** What became of an append: its entry id, or why the write is not in the log. */
export type Appended = { id: string } | { skipped: "not-kept" } | { failed: string };

export interface DurableWritesOptions {
  additionalSensitive: readonly string[];
  logger: Logger;
  /** How long a takeover's entries wait for their GitTarget to attach: the render gate's hold. */
  holdMs: number;
  /** Called when the queue stops or starts keeping the branch's writes. */
  onState: (state: QueueState) => void;
  /** Each append, by outcome, and each replayed entry, for the metrics. */
  onAppend?: (outcome: "appended" | "failed" | "fenced") => void;
  onReplayed?: (entries: number) => void;
  /** How long an append or a trim may take before the write goes on from memory: 2 s. */
  appendTimeoutMs?: number;
}

/** How long a takeover's read of the whole log may take: it pages through every entry. */
const readTimeoutMs = 30_000;

/** Trims at most this often while the worker goes idle; a landed push trims at once. */
const settleIntervalMs = 1_000;

export class DurableWrites {
  private loading: Promise<Backlog> | undefined;
  private backlog: Backlog | undefined;
  /** The newest id this worker has seen: appended, or read back. */
  private newest: string | undefined;
  /** For each append in flight, the newest id known when it was sent. */
  private readonly inFlight = new Map<number, string | undefined>();
  private nextAppend = 0;
  /** Where the log was last trimmed to (MINID). */
  private trimmed: string | undefined;
  private trimming: Promise<void> = Promise.resolve();
  private settledAt = 0;
  /** An idle trim came too soon after the last one: it is due once the interval is over. */
  private settleSkipped = false;
  private state: QueueState | undefined;
  /** The log refused this worker as no longer its holder, and that was said. */
  private fencedOnce = false;
  /**
   * The events of the entries replayed: the cursor a crashed process left is stored behind the
   * events it had taken into this queue (up to its save delay), so the watch resumed from it
   * delivers them again. Each is taken once, by the replay; its live delivery is dropped.
   */
  private readonly replayedEvents = new Set<string>();
  /**
   * The newest event replayed of each object: the same cursor delivers events older than it
   * whose entries the queue no longer held (superseded within a window, trimmed before the
   * crash). Taken again, such an event would put an older value over the replayed one, under the
   * replay's author, until a snapshot repaired it as the operator. Forgotten at the object's first
   * later event: every one after it is later too.
   */
  private readonly replayedNewest = new Map<string, string>();

  constructor(
    private readonly log: WriteLog,
    private readonly options: DurableWritesOptions,
  ) {}

  /** Reads what the log holds, once: a takeover's backlog, replayed target by target. */
  load(now: number): Promise<Backlog> {
    this.loading ??= this.read(now).then((backlog) => (this.backlog = backlog));
    return this.loading;
  }

  /**
   * The entries of one GitTarget (namespace/name) to replay, oldest first, once, each with the
   * values of its object's entries (`replayedValues`).
   */
  async replay(target: string, now: number): Promise<(QueueEntry & { replayed: Replayed })[]> {
    const taken = (await this.load(now)).take(target);
    const replayed = replayedValues(taken);
    const entries = taken.map((entry) => ({ ...entry, replayed: replayed.get(entry.id)! }));
    for (const { item } of taken) {
      const event = eventOf(target, item);
      if (!event) continue;
      this.replayedEvents.add(eventKey(event));
      const newest = this.replayedNewest.get(event.object);
      if (!newest || laterRevision(event.version, newest))
        this.replayedNewest.set(event.object, event.version);
    }
    if (entries.length > 0) {
      this.options.onReplayed?.(entries.length);
      this.options.logger.info("replaying accepted writes from the durable queue", {
        target,
        entries: entries.length,
        where: this.log.where,
      });
    }
    return entries;
  }

  /**
   * Whether a live item is an event the replay already covers, delivered again by a watch resumed
   * from a cursor stored behind it: one a replayed entry holds, or one older than the newest event
   * replayed of its object (its entry superseded or trimmed). Written again, an older value would
   * be committed over the newer one the replay put in Git. A worker that replayed nothing drops
   * nothing.
   */
  redelivered(target: string, item: StreamItem): boolean {
    if (this.replayedEvents.size === 0 && this.replayedNewest.size === 0) return false;
    const event = eventOf(target, item);
    if (!event) return false;
    if (this.replayedEvents.delete(eventKey(event))) return true;
    const newest = this.replayedNewest.get(event.object);
    if (!newest) return false;
    if (orderable(event.version, newest) && !laterRevision(event.version, newest)) return true;
    this.replayedNewest.delete(event.object);
    return false;
  }

  /** Appends a live write before the worker takes it; a marker, a snapshot or a Secret's value is not kept. */
  async append(target: string, item: StreamItem): Promise<Appended> {
    const durable = durableItem(item, this.options.additionalSensitive);
    if (!durable) return { skipped: "not-kept" };
    const token = this.nextAppend++;
    this.inFlight.set(token, this.newest);
    // A Redis that hangs instead of refusing must not stall the branch's intake: past the
    // timeout the write goes on from memory, and an append that lands later is held by
    // nothing, so the next trim takes it.
    try {
      const id = await this.answered(this.log.append(encodeEntry(target, durable)));
      this.newest = newestId([this.newest, id]);
      this.options.onAppend?.("appended");
      this.report({ available: true });
      return { id };
    } catch (err) {
      const error = (err as Error).message;
      this.options.onAppend?.(err instanceof LogFenced ? "fenced" : "failed");
      this.failed(err);
      return { failed: error };
    } finally {
      this.inFlight.delete(token);
    }
  }

  /**
   * Trims the log to the oldest entry the worker still holds (`held`): after a push landed, or
   * at most once a second while the worker goes idle, so an entry dropped on purpose is not
   * replayed after a crash.
   */
  settle(held: Iterable<string | undefined>, now: number, pushed: boolean): void {
    if (!pushed && now < this.settledAt + settleIntervalMs) {
      this.settleSkipped = true;
      return;
    }
    this.settledAt = now;
    this.settleSkipped = false;
    for (const [target, entries] of this.backlog?.expire(now) ?? [])
      this.options.logger.error(
        "the durable queue's entries for a GitTarget that never attached are let go",
        {
          target,
          entries,
          where: this.log.where,
        },
      );
    const minId = trimPoint({
      held: oldestId([...held, this.backlog?.oldest()]),
      inFlight: [...this.inFlight.values()],
      newest: this.newest,
    });
    if (minId === undefined || (this.trimmed !== undefined && compareIds(minId, this.trimmed) <= 0)) return;
    this.trimmed = minId;
    this.trimming = this.trimming
      .then(() => this.answered(this.log.trim(minId)))
      .catch((err: unknown) => this.failed(err));
  }

  /** When an idle trim skipped as too soon may run: the worker wakes for it, so nothing waits on the next event. */
  settleDueAt(): number | undefined {
    return this.settleSkipped ? this.settledAt + settleIntervalMs : undefined;
  }

  /** Resolves once every trim asked for so far has been tried. */
  flushed(): Promise<void> {
    return this.trimming;
  }

  private async read(now: number): Promise<Backlog> {
    let raw: LogEntry[];
    try {
      raw = await this.answered(this.log.read(), readTimeoutMs);
    } catch (err) {
      this.failed(err);
      return new Backlog([], now);
    }
    const entries: QueueEntry[] = [];
    for (const [id, value, refused] of raw) {
      // A refused entry (the store said why) is never used, and is trimmed with the rest.
      this.newest = newestId([this.newest, id]);
      if (refused) continue;
      const entry = decodeEntry(id, value);
      if ("unreadable" in entry)
        this.options.logger.error("a durable queue entry cannot be read; it is skipped", {
          error: entry.unreadable,
          where: this.log.where,
        });
      else entries.push(entry);
    }
    this.report({ available: true });
    return new Backlog(entries, now + this.options.holdMs);
  }

  /** A call to the log, or its failure once it has not answered in time. */
  private answered<T>(call: Promise<T>, ms = this.options.appendTimeoutMs ?? 2_000): Promise<T> {
    return within(call, ms, `${this.log.where} did not answer within ${ms} ms`);
  }

  /** A call on the log failed: the store is away, or another process holds the log now. */
  private failed(err: unknown): void {
    if (!(err instanceof LogFenced)) {
      this.unavailable((err as Error).message);
      return;
    }
    if (this.fencedOnce) return;
    this.fencedOnce = true;
    this.options.logger.warn(
      "the durable write queue is held by another process: this one lost the branch, and keeps nothing more in it",
      { error: err.message, where: this.log.where },
    );
  }

  private unavailable(error: string): void {
    if (this.state?.available === false) return;
    this.options.logger.error(
      "the durable write queue is unavailable; the branch's writes go on from memory",
      {
        error,
        where: this.log.where,
      },
    );
    this.report({ available: false, error, since: new Date() });
  }

  private report(state: QueueState): void {
    if (this.state?.available === state.available) return;
    this.state = state;
    this.options.onState(state);
  }
}

/**
 * Where the log may be trimmed to (its MINID), or undefined for nowhere: before the oldest entry
 * still held, and no later than what every append in flight may still land after. With nothing
 * held and nothing in flight, everything up to the newest id known is done.
 */
export function trimPoint(facts: {
  held: string | undefined;
  inFlight: (string | undefined)[];
  newest: string | undefined;
}): string | undefined {
  // An append sent before any id was known may land anywhere: nothing may be trimmed yet.
  if (facts.inFlight.some((known) => known === undefined)) return undefined;
  const bounds = [
    facts.held,
    ...facts.inFlight.map((known) => idAfter(known!)),
    facts.held === undefined && facts.newest !== undefined ? idAfter(facts.newest) : undefined,
  ];
  return oldestId(bounds);
}
