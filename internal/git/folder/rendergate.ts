// The render-vs-live gate of one GitTarget, published as RenderMatchesLive. Live writes flow
// only once every collection's replay has measured the folder's ${...} values clean against
// live; until then they are held, and after a divergence they are dropped, because mirroring a
// substituted value would destroy the token in Git. One gate per target: one collection still
// replaying closes live writes for all of them. Pure state with the clock passed in; the
// caller owns the timer, the writes and the git_writes_dropped_total counter.

export type GateStatus = "Unknown" | "True" | "False";

export interface GateReport {
  status: GateStatus;
  reason: "Rechecking" | "Succeeded" | "RenderDoesNotMatchLive";
  message: string;
}

export interface RenderGateLimits {
  /** How long the oldest held event may wait: 10 minutes in production. */
  holdMs: number;
  /** The most held bytes: the branch's retained-byte budget in production. */
  budgetBytes: number;
}

/** The git_writes_dropped_total reason of a dropped live event. */
export type DropReason = "render_fidelity_pending" | "render_fidelity_diverged";

/**
 * What becomes of a live event: written now, held until the gate decides, or dropped here for
 * the reason named, which the caller counts.
 */
export type Admission = "pass" | "held" | DropReason;

/** A measured disagreement, already formatted by the caller for the condition message. */
export interface MeasuredDivergence {
  document: string;
  path: string;
  rendered: string;
  live: string;
}

/** What a measurement did to the held events. */
export interface GateChange<E> {
  /** Released because the gate opened, in arrival order; write them before any later event. */
  released: E[];
  /** Dropped because the gate went False: counted as render_fidelity_diverged. */
  dropped: E[];
}

/** What giving up a hold dropped, and the collections whose fresh snapshot restores it. */
export interface Expiry<E> {
  /** Counted as render_fidelity_pending. */
  dropped: E[];
  resync: string[];
}

type Measurement =
  { kind: "unmeasured" } | { kind: "clean" } | { kind: "diverged"; divergences: MeasuredDivergence[] };

interface Held<E> {
  collection: string;
  event: E;
  bytes: number;
  at: number;
}

interface GivenUp<E> {
  at: number;
  events: E[];
  collections: Set<string>;
}

// Long enough to recognise a value, short enough that a condition message stays one line.
const maxShownChars = 80;

export class RenderGate<E> {
  private readonly collections = new Map<string, Measurement>();
  private held: Held<E>[] = [];
  private givenUp: GivenUp<E> | undefined;

  constructor(private readonly limits: RenderGateLimits) {}

  /** A collection (re)started its replay: it is unmeasured until its snapshot arrives. */
  replayStarted(collection: string): void {
    // Starting a replay can only close the gate, never open it nor turn it False, so nothing
    // held is released or dropped here.
    this.collections.set(collection, { kind: "unmeasured" });
  }

  /**
   * A collection's watch stopped for good (removed from the plan): it no longer counts.
   * Returns the held events released if that opened the gate, in arrival order.
   */
  collectionRemoved(collection: string): E[] {
    this.collections.delete(collection);
    return this.settle().released;
  }

  /**
   * A collection's snapshot arrived: it holds the current state of every object the events of
   * this collection held so far were about, so it supersedes them; they are discarded and
   * counted nowhere. Events held after it are newer than it, and stay.
   */
  snapshotArrived(collection: string): void {
    this.held = this.held.filter((h) => h.collection !== collection);
  }

  /**
   * The collection's replay measured the folder; `divergences` describes what disagreed
   * (empty when clean). Then the gate settles: opening releases every held event, going False
   * drops them.
   */
  replayMeasured(collection: string, divergences: MeasuredDivergence[]): GateChange<E> {
    this.collections.set(
      collection,
      divergences.length === 0 ? { kind: "clean" } : { kind: "diverged", divergences: [...divergences] },
    );
    return this.settle();
  }

  /**
   * Judges a live event of `collection` at `now`: pass while True; held (kept, in order)
   * while Unknown; render_fidelity_diverged while False. An event that would take the held
   * bytes past the budget is not held: it is dropped as render_fidelity_pending and the whole
   * hold gives up, to be returned by the next `expire`, which `dueAt` makes due at once.
   */
  admit(collection: string, event: E, bytes: number, now: number): Admission {
    const status = this.status();
    if (status === "True") return "pass";
    if (status === "False") return "render_fidelity_diverged";
    if (this.heldBytes + bytes > this.limits.budgetBytes) {
      this.giveUp(now).collections.add(collection);
      return "render_fidelity_pending";
    }
    this.held.push({ collection, event, bytes, at: now });
    return "held";
  }

  /**
   * Gives up a hold whose oldest event is holdMs old at `now`, and any hold the budget gave
   * up: returns the dropped events (render_fidelity_pending) and, in arrival order, the
   * collections a fresh snapshot should be asked for.
   */
  expire(now: number): Expiry<E> {
    const oldest = this.held[0];
    if (oldest && now >= oldest.at + this.limits.holdMs) this.giveUp(now);
    const given = this.givenUp;
    this.givenUp = undefined;
    return { dropped: given?.events ?? [], resync: [...(given?.collections ?? [])] };
  }

  /** When the hold gives up if nothing opens the gate first. */
  dueAt(): number | undefined {
    if (this.givenUp) return this.givenUp.at;
    const oldest = this.held[0];
    return oldest ? oldest.at + this.limits.holdMs : undefined;
  }

  /** The RenderMatchesLive condition the gate publishes. */
  report(): GateReport {
    const status = this.status();
    if (status === "False")
      return { status, reason: "RenderDoesNotMatchLive", message: this.divergenceMessage() };
    if (status === "Unknown") {
      const replaying = [...this.collections.values()].filter((m) => m.kind === "unmeasured").length;
      return {
        status,
        reason: "Rechecking",
        message: `${replaying} of ${this.collections.size} collections still replaying; live writes are held`,
      };
    }
    return {
      status,
      reason: "Succeeded",
      message:
        this.collections.size === 0
          ? "Nothing to measure"
          : `Every rendered value of ${this.collections.size} collections matches live`,
    };
  }

  /** The events it holds now, to be released or dropped; not those a given-up hold dropped. */
  *holding(): Generator<E> {
    for (const h of this.held) yield h.event;
  }

  /** The bytes of the events held now. */
  get heldBytes(): number {
    return this.held.reduce((sum, h) => sum + h.bytes, 0);
  }

  private status(): GateStatus {
    const measurements = [...this.collections.values()];
    if (measurements.some((m) => m.kind === "diverged")) return "False";
    if (measurements.some((m) => m.kind === "unmeasured")) return "Unknown";
    return "True";
  }

  private settle(): GateChange<E> {
    const status = this.status();
    if (status === "Unknown") return { released: [], dropped: [] };
    const events = this.held.map((h) => h.event);
    this.held = [];
    return status === "True" ? { released: events, dropped: [] } : { released: [], dropped: events };
  }

  /** Moves everything held into the given-up batch, which `expire` returns. */
  private giveUp(now: number): GivenUp<E> {
    const given = (this.givenUp ??= { at: now, events: [], collections: new Set<string>() });
    for (const h of this.held) {
      given.events.push(h.event);
      given.collections.add(h.collection);
    }
    this.held = [];
    return given;
  }

  private divergenceMessage(): string {
    // Sorted by collection so the message does not change with the order replays finish in.
    const divergences = [...this.collections.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .flatMap(([, m]) => (m.kind === "diverged" ? m.divergences : []));
    const first = divergences[0]!;
    const more = divergences.length > 1 ? ` (and ${divergences.length - 1} more)` : "";
    return (
      `${first.document} ${first.path}: the folder renders ${shown(first.rendered)} ` +
      `but live holds ${shown(first.live)}${more}`
    );
  }
}

// Quoted, so a value's spaces and newlines cannot blur into the sentence around it.
function shown(value: string): string {
  return JSON.stringify(value.length > maxShownChars ? `${value.slice(0, maxShownChars)}…` : value);
}
