// A CommitRequest on its branch worker: the requests waiting for a window, decided as pure
// state with the clock passed in, so each attach rule of the seeds is pinned by a test. The
// worker owns one AttachQueue and drives it from its own FIFO, so resource events and attaches
// are ordered by one queue.
//
// - A request attaches only to an open window of the same GitTarget, the same named actor, and
//   the same "names an actor" state: one user's request never finalizes another's work.
// - A window is only ever opened by a write; a request never opens one, and a window carries
//   at most one request.
// - The attach deadline is registration plus attachTimeout; registering again is idempotent.
// - CurrentOrNext attaches to a matching window already open at registration, before any
//   deadline is consulted, so attachTimeout 0s can attach at all. Next closes that window first
//   and waits for the next one.
// - Waiting requests are served first come, first served; a request whose deadline has passed
//   resolves and never takes a later window, and when its deadline and a matching window are
//   ready on the same wake, expiry wins.

export type AttachMode = "CurrentOrNext" | "Next";

/** Whose window it is, as a request matches it. */
export interface WindowClaim {
  /** The GitTarget, as namespace/name. */
  target: string;
  /** The named actor's username; undefined for a configured-author or unresolved window. */
  actor: string | undefined;
}

export interface AttachRequest extends WindowClaim {
  /** The CommitRequest's uid: a re-sent attach with the same id is the same request. */
  id: string;
  mode: AttachMode;
  attachTimeoutMs: number;
}

/** The open window, as the queue sees it. */
export interface OpenWindowView extends WindowClaim {
  /** Whether a request is attached to it already. */
  attached: boolean;
}

/** How a wait ended without a window: none of its target opened, or only another author's. */
export type Unattached = "NoWindow" | "WindowMismatch";

export type RegisterDecision =
  /** Attach now to the open window. */
  | { kind: "attach" }
  /** Close the open window first (attach: Next), then wait. */
  | { kind: "closeThenWait" }
  | { kind: "wait" }
  /** Known already: this attach changes nothing. */
  | { kind: "known" }
  /** attachTimeout 0s and nothing to attach to: resolved at once. */
  | { kind: "resolved"; outcome: Unattached };

interface Waiting {
  request: AttachRequest;
  deadline: number;
  /** A window of the request's target opened, or was open, while it waited, and it was not theirs. */
  sawOtherAuthor: boolean;
}

/** Whether a request may attach to a window: the seeds' three matching rules. */
export function windowMatches(request: WindowClaim, window: WindowClaim): boolean {
  return request.target === window.target && request.actor === window.actor;
}

export class AttachQueue {
  /** Waiting requests, in registration order. */
  private readonly waiting = new Map<string, Waiting>();
  /** Requests this queue has seen, waiting or not: a re-send of one is never registered again. */
  private readonly known = new Set<string>();

  /** Registers a request, deciding against the window open now (if any). */
  register(request: AttachRequest, now: number, open: OpenWindowView | undefined): RegisterDecision {
    if (this.known.has(request.id)) return { kind: "known" };
    this.known.add(request.id);
    const ours = open !== undefined && windowMatches(request, open);
    const matching = ours && !open.attached;
    if (matching && request.mode === "CurrentOrNext") return { kind: "attach" };
    const sawOtherAuthor = open !== undefined && open.target === request.target && !ours;
    if (request.attachTimeoutMs <= 0 && !matching) {
      return { kind: "resolved", outcome: sawOtherAuthor ? "WindowMismatch" : "NoWindow" };
    }
    this.waiting.set(request.id, { request, deadline: now + request.attachTimeoutMs, sawOtherAuthor });
    return matching ? { kind: "closeThenWait" } : { kind: "wait" };
  }

  /**
   * A window opened (or is open after a write) at `now`: the requests past their deadline
   * resolve first, then the first waiting request it matches attaches.
   */
  windowOpened(
    window: OpenWindowView,
    now: number,
  ): { expired: [string, Unattached][]; attach: string | undefined } {
    const expired = this.expire(now);
    let attach: string | undefined;
    for (const [id, entry] of this.waiting) {
      if (windowMatches(entry.request, window)) {
        if (attach === undefined && !window.attached) attach = id;
      } else if (entry.request.target === window.target) {
        entry.sawOtherAuthor = true;
      }
    }
    if (attach !== undefined) this.waiting.delete(attach);
    return { expired, attach };
  }

  /** The waiting requests whose deadline has passed, each with how its wait ended. */
  expire(now: number): [string, Unattached][] {
    const expired: [string, Unattached][] = [];
    for (const [id, entry] of this.waiting) {
      if (entry.deadline > now) continue;
      this.waiting.delete(id);
      expired.push([id, entry.sawOtherAuthor ? "WindowMismatch" : "NoWindow"]);
    }
    return expired;
  }

  /** When the next waiting request expires, for the worker's timer. */
  nextDeadline(): number | undefined {
    let next: number | undefined;
    for (const { deadline } of this.waiting.values())
      if (next === undefined || deadline < next) next = deadline;
    return next;
  }

  /** Withdraws a request still waiting: true when it was, false when it is held or unknown. */
  withdraw(id: string): boolean {
    return this.waiting.delete(id);
  }

  /** Forgets a request once its outcome was read, so its id may leave memory. */
  forget(id: string): void {
    this.waiting.delete(id);
    this.known.delete(id);
  }

  get size(): number {
    return this.waiting.size;
  }
}
