// What one collection watch reports about itself: its sessions and how each ended, its
// snapshots and their cost, how it recovered from an error, and its live events with how long
// each kept the watch busy. Labeled by the GitTarget and the type: the mirrored objects never
// are labels (docs/metrics.md).
import type { StreamItem } from "../stream/stream.ts";
import type { Collection } from "../stream/collection.ts";
import type { TargetRef } from "../rulestore/compile.ts";
import type { ExclusionReason } from "../rulestore/exclusions.ts";
import {
  watchEventHandling,
  watchEvents,
  watchEventsExcluded,
  watchRecoveries,
  watchReplayDuration,
  watchReplayObjects,
  watchReplays,
  watchSessionEnds,
  watchSessions,
} from "../telemetry/instruments.ts";

/**
 * How a connection began: the first after start, the first resuming a cursor another process
 * left (a takeover), a resume from the cursor, or a new snapshot.
 */
export type SessionStart = "initial" | "takeover" | "resume" | "reinitialize";

/** Why a connection ended. */
export type SessionEnd = "timeout" | "gone" | "error" | "resync" | "paused" | "stopped";

/** What the watch made of a live event. */
export type EventOutcome = "routed" | "noop" | "ignored" | "excluded";

export type ReplayMode = "watchlist" | "list";

export class WatchMeter {
  private readonly target: { gittarget_namespace: string; gittarget_name: string };
  /** The last connection ended on an error or 410: the next start is a recovery. */
  private recovering = false;

  constructor(
    target: TargetRef,
    private readonly collection: Collection,
  ) {
    this.target = { gittarget_namespace: target.namespace, gittarget_name: target.name };
  }

  started(start: SessionStart): void {
    watchSessions.inc({ ...this.target, start });
    if (start !== "initial" && this.recovering)
      watchRecoveries.inc({ ...this.target, mode: start === "resume" ? "resume" : "replay" });
    this.recovering = false;
  }

  ended(reason: SessionEnd): void {
    watchSessionEnds.inc({ ...this.target, reason });
    this.recovering = reason === "gone" || reason === "error";
  }

  /** A snapshot completed: `since` is when its connection opened (performance.now()). */
  replayed(mode: ReplayMode, objects: number, since: number): void {
    watchReplays.inc({ ...this.target, mode });
    watchReplayObjects.inc(this.target, objects);
    watchReplayDuration.observe({ ...this.target, mode }, (performance.now() - since) / 1000);
  }

  event(eventType: string, outcome: EventOutcome): void {
    const { group, resource } = this.collection;
    watchEvents.inc({ ...this.target, group, resource, event_type: eventType, outcome });
  }

  /** A live event a rule's exclusions kept out, and why. */
  excluded(eventType: string, reason: ExclusionReason): void {
    this.event(eventType, "excluded");
    watchEventsExcluded.inc({ ...this.target, reason });
  }

  /** Snapshot entries excludeObjects kept out. */
  keptOut(objects: number): void {
    if (objects > 0) watchEventsExcluded.inc({ ...this.target, reason: "object" }, objects);
  }

  /** The item a live event routed, observed once it is ready for the stream (its author and proof in). */
  handled(item: StreamItem | Promise<StreamItem>, arrived: number): StreamItem | Promise<StreamItem> {
    const observe = () => watchEventHandling.observe(this.target, (performance.now() - arrived) / 1000);
    if (!(item instanceof Promise)) {
      observe();
      return item;
    }
    return item.then((ready) => {
      observe();
      return ready;
    });
  }
}
