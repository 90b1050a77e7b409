// Resyncs while Git is ahead (applier-claims.md, "Resyncs while Git is ahead"). A snapshot holds
// live state; while a commit is pushed and not yet applied, it holds the old state of every
// object that commit changes, and one whose collection overlapped an apply holds a mix. Decided,
// either would commit the cluster's old values over the pushed change. So the branch worker
// discards such a snapshot and asks for a fresh one once Git is no longer ahead. Pure: the
// worker feeds it what it knows when each snapshot arrives, and asks it what to re-anchor.
import type { CollectedWhile } from "../../types/applied.ts";

/** How long a GitTarget's snapshots are held at most, from its first discard. */
export const staleHoldMs = 5 * 60_000;

/**
 * What becomes of one snapshot: used; used as a GitTarget's first of a collection (the startup
 * baseline, which the three-way rule judges); discarded; or used stale because the hold ran out.
 */
export type SnapshotVerdict = "use" | "initial" | "discard" | "use_stale";

interface Held {
  /** When the first snapshot of this hold was discarded. */
  since: number;
  /** A fresh snapshot has been asked for since the last discard. */
  asked: boolean;
}

export class StaleSnapshots {
  /** The collections of each GitTarget that have had a snapshot taken: the rest are initial. */
  private readonly settled = new Set<string>();
  /** The GitTargets whose snapshots are held, by key. */
  private readonly held = new Map<string, Held>();

  /**
   * Judges a snapshot of `collection` for `target`, arriving `now`, collected as `collected`
   * says, when Git is `aheadNow` at `epochNow`. A GitTarget's first snapshot of a collection is
   * its startup baseline and never waits; a snapshot with no stamp (collected where no applier
   * was known) is judged only on what is true now.
   */
  judge(
    target: string,
    collection: string,
    collected: CollectedWhile | undefined,
    now: { at: number; epoch: number; ahead: boolean },
  ): SnapshotVerdict {
    const key = `${target}\u0000${collection}`;
    if (!this.settled.has(key)) {
      this.settled.add(key);
      return "initial";
    }
    const stale =
      now.ahead || (collected !== undefined && (collected.ahead || collected.epoch !== now.epoch));
    const held = this.held.get(target);
    if (!stale) {
      this.held.delete(target);
      return "use";
    }
    if (held && now.at - held.since >= staleHoldMs) {
      this.held.delete(target);
      return "use_stale";
    }
    this.held.set(target, { since: held?.since ?? now.at, asked: false });
    return "discard";
  }

  /**
   * The GitTargets to ask a fresh snapshot of now: those with a discarded snapshot, once Git is
   * no longer ahead, and those held past the limit whatever Git is (that snapshot is used).
   * Each is asked once per discard. `ahead` is asked only when some GitTarget waits: the worker
   * calls this every turn, and knowing whether Git is ahead costs a walk of the branch's appliers.
   */
  reanchor(now: number, ahead: () => boolean): string[] {
    const asked: string[] = [];
    let isAhead: boolean | undefined;
    for (const [target, held] of this.held) {
      if (held.asked) continue;
      if (now - held.since < staleHoldMs && (isAhead ??= ahead())) continue;
      held.asked = true;
      asked.push(target);
    }
    return asked;
  }

  /** When a held GitTarget's limit runs out, for the worker's wake; undefined when none waits on it. */
  dueAt(): number | undefined {
    let at: number | undefined;
    for (const held of this.held.values())
      if (!held.asked) at = Math.min(at ?? Infinity, held.since + staleHoldMs);
    return at;
  }

  /** Forgets a GitTarget that left the branch. */
  forget(target: string): void {
    this.held.delete(target);
    for (const key of this.settled) if (key.startsWith(`${target}\u0000`)) this.settled.delete(key);
  }
}
