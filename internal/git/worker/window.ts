// The commit window: the writes of one author to one GitTarget, collected until something
// closes them into one commit. Pure state with the clock passed in, so every closing rule is
// pinned by a test; the branch worker owns one and drives it from its event loop.
import type { WindowTimers } from "../folder/writes.ts";

/** Who a window belongs to: one author and one GitTarget. */
export interface WindowOwner {
  /** The author's identity, such as "GitOps Reverser <noreply@configbutler.ai>". */
  author: string;
  /** The GitTarget, as namespace/name. */
  target: string;
  /** The named actor's username; undefined for a configured-author or unresolved window. */
  actor?: string;
}

export type CloseReason =
  | "idle" // idleTimeout of silence
  | "max_duration" // maxDuration after it opened
  | "buffer_full" // --branch-buffer-max-size reached
  | "other_owner" // another author or GitTarget wrote
  | "resync" // a resync arrived for the branch
  | "request" // an attach: Next CommitRequest
  | "delivery" // a push delivery named the branch
  | "apply_due" // an apply came due: the flush before it
  | "shutdown";

export interface ClosedWindow<T> {
  owner: WindowOwner;
  reason: CloseReason;
  openedAt: number;
  /** The writes, one per object, in the order each object was first written. */
  writes: T[];
  /** What the writes weigh, as they were added. */
  bytes: number;
  /** The CommitRequest attached to it, by uid: its message closes the window. */
  request?: string;
}

interface OpenWindow<T> {
  owner: WindowOwner;
  timers: WindowTimers;
  openedAt: number;
  /** What maxDuration runs from: the opening, or a request's attach. */
  maxFrom: number;
  lastWriteAt: number;
  request?: string;
  bytes: number;
  writes: Map<string, { write: T; bytes: number }>;
}

const sameOwner = (a: WindowOwner, b: WindowOwner) => a.author === b.author && a.target === b.target;

export class CommitWindow<T> {
  private open: OpenWindow<T> | undefined;

  constructor(private readonly bufferLimitBytes: number) {}

  get isOpen(): boolean {
    return this.open !== undefined;
  }

  get owner(): WindowOwner | undefined {
    return this.open?.owner;
  }

  /** The bytes the open window holds. */
  get bytes(): number {
    return this.open?.bytes ?? 0;
  }

  /**
   * Adds one write. A write of another owner closes the open window first (returned as
   * `closed`); a second write to the same object replaces the first (last write wins). A window
   * whose buffered bytes reach the limit closes at once, with this write in it.
   */
  add(
    owner: WindowOwner,
    timers: WindowTimers,
    storeKeyOf: string,
    write: T,
    bytes: number,
    now: number,
  ): ClosedWindow<T>[] {
    const closed: ClosedWindow<T>[] = [];
    if (this.open && !sameOwner(this.open.owner, owner)) closed.push(this.close("other_owner")!);
    const window = (this.open ??= {
      owner,
      timers,
      openedAt: now,
      maxFrom: now,
      lastWriteAt: now,
      bytes: 0,
      writes: new Map<string, { write: T; bytes: number }>(),
    });
    const previous = window.writes.get(storeKeyOf);
    if (previous) {
      window.bytes -= previous.bytes;
      previous.write = write;
      previous.bytes = bytes;
    } else {
      window.writes.set(storeKeyOf, { write, bytes });
    }
    window.bytes += bytes;
    window.lastWriteAt = now;
    if (window.bytes >= this.bufferLimitBytes) closed.push(this.close("buffer_full")!);
    return closed;
  }

  /** The writes of the open window, one per object. */
  *writes(): Generator<T> {
    for (const { write } of this.open?.writes.values() ?? []) yield write;
  }

  /** The CommitRequest attached to the open window, if any. */
  get request(): string | undefined {
    return this.open?.request;
  }

  /**
   * Attaches a CommitRequest to the open window: its timers replace the window's, and both run
   * from now, so the time the request waited never shortens the collection it asked for.
   */
  attachRequest(request: string, timers: WindowTimers, now: number): void {
    const window = this.open;
    if (!window || window.request !== undefined) throw new Error("no open window free to attach to");
    window.request = request;
    window.timers = timers;
    window.maxFrom = now;
    window.lastWriteAt = now;
  }

  /** When the open window's timers close it, if one is open. */
  dueAt(): number | undefined {
    if (!this.open) return undefined;
    const { lastWriteAt, maxFrom, timers } = this.open;
    return Math.min(lastWriteAt + timers.idleTimeoutMs, maxFrom + timers.maxDurationMs);
  }

  /** Closes the window if its timers say so at `now`. */
  tick(now: number): ClosedWindow<T> | undefined {
    const due = this.dueAt();
    if (due === undefined || now < due) return undefined;
    const { lastWriteAt, maxFrom, timers } = this.open!;
    const byMax = maxFrom + timers.maxDurationMs <= lastWriteAt + timers.idleTimeoutMs;
    return this.close(byMax ? "max_duration" : "idle");
  }

  /** Closes the open window now, for a reason outside its timers. */
  close(reason: CloseReason): ClosedWindow<T> | undefined {
    const window = this.open;
    if (!window) return undefined;
    this.open = undefined;
    return {
      owner: window.owner,
      reason,
      openedAt: window.openedAt,
      writes: [...window.writes.values()].map((w) => w.write),
      bytes: window.bytes,
      ...(window.request !== undefined ? { request: window.request } : {}),
    };
  }
}
