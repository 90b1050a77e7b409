// What a takeover found in a branch's durable queue and has not replayed yet: the entries of each
// GitTarget, oldest first, until that target's stream attaches and takes them. A target that
// never attaches (deleted while no replica held its branch) lets its entries go after the hold,
// as the render gate lets a held event go, so a gone target never stops the queue's trim. Pure
// state with the clock passed in.
import { oldestId } from "./entryids.ts";
import type { QueueEntry } from "./entries.ts";

export class Backlog {
  private readonly byTarget = new Map<string, QueueEntry[]>();

  constructor(
    entries: QueueEntry[],
    /** When entries nobody took are let go. */
    private readonly expiresAt: number,
  ) {
    for (const entry of entries) {
      const list = this.byTarget.get(entry.target) ?? [];
      list.push(entry);
      this.byTarget.set(entry.target, list);
    }
  }

  /** A target's entries, oldest first, once: a second take finds none. */
  take(target: string): QueueEntry[] {
    const entries = this.byTarget.get(target) ?? [];
    this.byTarget.delete(target);
    return entries;
  }

  /** The oldest entry not taken yet: the queue is trimmed no further. */
  oldest(): string | undefined {
    return oldestId([...this.byTarget.values()].map((entries) => entries[0]?.id));
  }

  /** Lets every entry nobody took go once the hold is over: the GitTargets, with how many each. */
  expire(now: number): Map<string, number> {
    if (now < this.expiresAt || this.byTarget.size === 0) return new Map();
    const dropped = new Map([...this.byTarget].map(([target, entries]) => [target, entries.length]));
    this.byTarget.clear();
    return dropped;
  }
}
