// The branch budget's gate on intake. While a retry is pending (an outage, or a remote that
// keeps moving), everything the branch accepted and has not published counts against
// --branch-buffer-max-size; the first time it does not fit, intake pauses, and the watches feeding
// the branch stop reading with their cursors kept, until a push lands and the wait ends.
import type { StreamItem } from "../../stream/stream.ts";
import type { BranchState } from "./report.ts";

/** Every accepted item costs this much besides its bytes, so many small ones count too. */
export const itemChargeBytes = 1024;

/** What an item weighs against the budget: its objects as JSON. */
export const bytesOf = (item: StreamItem) =>
  item.type === "upsert"
    ? JSON.stringify(item.object).length
    : item.type === "snapshot"
      ? item.objects.reduce((sum, o) => sum + JSON.stringify(o.object).length, 0)
      : 0;

/** Whether intake pauses: a pending retry and a spent budget; a landed push reopens it. */
export function intakePauses(
  paused: boolean,
  waiting: boolean,
  retainedBytes: number,
  limit: number,
): boolean {
  if (!waiting) return false;
  return paused || retainedBytes >= limit;
}

export class IntakeGate {
  private closed = false;
  private waiters: (() => void)[] = [];
  private lastState = "";

  get paused(): boolean {
    return this.closed;
  }

  /** Resolves once the branch takes items again: at once while the gate is open. */
  open(): Promise<void> {
    if (!this.closed) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Pauses or reopens intake, as intakePauses decides. */
  update(waiting: boolean, retainedBytes: number, limit: number): void {
    this.closed = intakePauses(this.closed, waiting, retainedBytes, limit);
    if (!this.closed) this.release();
  }

  /**
   * The branch's state with the gate's verdict in it, when it changed what a person acts on:
   * bytes move with every item, so they alone never count as a change.
   */
  changed(state: Omit<BranchState, "intakePaused">): BranchState | undefined {
    const full = { ...state, intakePaused: this.closed };
    const key = JSON.stringify({ ...full, retainedBytes: undefined });
    if (key === this.lastState) return undefined;
    this.lastState = key;
    return full;
  }

  /** Lets every waiter go, as a stopping worker does. */
  release(): void {
    for (const resolve of this.waiters.splice(0)) resolve();
  }
}
