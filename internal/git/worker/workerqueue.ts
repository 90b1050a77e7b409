// A branch worker's FIFO: live items, resyncs, rechecks, refreshes, CommitRequest attaches and
// withdraws, served one at a time by the worker's loop. It weighs the items it holds for the
// branch budget, and puts the loop to sleep until its next deadline or the next event.
import { sleep } from "../../timing/sleep.ts";
import { itemChargeBytes } from "./intakebudget.ts";
import type { Intake } from "../folder/targetfolders.ts";

export class WorkerQueue<E extends object> {
  private readonly events: (E | Intake)[] = [];
  /** What the queued items weigh, each with its charge: kept as they come and go, for the budget. */
  private weight = 0;
  /** How many snapshots it holds for each GitTarget (its key): asked on every live write of a claimed target. */
  private readonly snapshots = new Map<string, number>();
  private wake: () => void = () => undefined;

  get length(): number {
    return this.events.length;
  }

  get bytes(): number {
    return this.weight;
  }

  /** Queues an event at the back and wakes the loop. */
  push(event: E): void {
    this.events.push(event);
    this.wake();
  }

  /** Queues items at the back, or (released by a gate) at the front, counting their weight. */
  items(items: Intake[], end: "front" | "back"): void {
    for (const item of items) {
      this.weight += (item.bytes ?? 0) + itemChargeBytes;
      if (item.item.type === "snapshot") this.countSnapshot(item.target.key, 1);
    }
    if (end === "front") this.events.unshift(...items);
    else this.events.push(...items);
    this.wake();
  }

  /** The items it holds, in order. */
  *intakes(): Generator<Intake> {
    for (const event of this.events) if ("item" in event) yield event;
  }

  /** The durable queue entries of the items it holds. */
  *entries(): Generator<string | undefined> {
    for (const intake of this.intakes()) yield intake.entry;
  }

  shift(): E | Intake | undefined {
    const event = this.events.shift();
    if (event && "item" in event) {
      this.weight -= (event.bytes ?? 0) + itemChargeBytes;
      if (event.item.type === "snapshot") this.countSnapshot(event.target.key, -1);
    }
    return event;
  }

  /** Whether it holds a snapshot for the GitTarget `targetKey`. */
  holdsSnapshot(targetKey: string): boolean {
    return this.snapshots.has(targetKey);
  }

  private countSnapshot(targetKey: string, by: 1 | -1): void {
    const count = (this.snapshots.get(targetKey) ?? 0) + by;
    if (count > 0) this.snapshots.set(targetKey, count);
    else this.snapshots.delete(targetKey);
  }

  /**
   * Sleeps until the earliest deadline (a minute without one), an event, or `signal`; never wakes
   * for a deadline before Date.now() has reached it. A timer can fire a few milliseconds early by
   * that clock (the event loop's cached time starts it), and a deadline then judged not yet
   * reached is past by the next sleep, which sets no timer for it: the worker would sleep on
   * until something else woke it.
   */
  async sleep(deadlines: (number | undefined)[], signal: AbortSignal): Promise<void> {
    const due = deadlines.filter((d): d is number => d !== undefined);
    const until = due.length > 0 ? Math.min(...due) : Date.now() + 60_000;
    // An event queued while the loop was awaiting something else has nobody to wake it.
    if (this.events.length > 0) return;
    const woken = new Promise<true>((resolve) => (this.wake = () => resolve(true)));
    // The timer ends with the sleep, whatever ends it: one left behind by every wake would keep a
    // listener on the worker's long-lived signal until it fired (up to the refresh interval).
    const ended = new AbortController();
    const stop = () => ended.abort();
    signal.addEventListener("abort", stop, { once: true });
    try {
      for (;;) {
        const wait = Math.max(0, until - Date.now());
        const byEvent = await Promise.race([woken, sleep(wait, ended.signal).then(() => false)]);
        if (byEvent || signal.aborted || Date.now() >= until) break;
      }
    } finally {
      ended.abort();
      signal.removeEventListener("abort", stop);
      this.wake = () => undefined;
    }
  }
}
