// A branch worker's CommitRequests, from the attach that registers one to the outcome its push
// decides: which are waiting for a window, which ride an open window or a decided write (held:
// only the worker ends those), and the outcomes kept for the controller to read. Pure state with
// the clock passed in; the worker drives it from its own FIFO, so an attach, a withdraw and the
// writes they race are decided in one order.
import {
  AttachQueue,
  type AttachRequest,
  type OpenWindowView,
  type RegisterDecision,
  type Unattached,
} from "./attach.ts";
import type { Outcome, Phase } from "./outcome.ts";

/** A CommitRequest as its worker needs it. */
export interface SaveRequest extends AttachRequest {
  /** spec.message, verbatim; undefined: the target's liveTemplate writes it. */
  message?: string;
  whenNothingToCommit: "Resolve" | "CommitEmpty";
  /** Replaces the window's idleTimeout from the attach; undefined: no idle timeout. */
  idleTimeoutMs?: number;
  /** Replaces the window's maxDuration from the attach. */
  maxDurationMs: number;
}

/** What the worker says of a request: where it is, or how it ended. */
export type Report = { phase: Phase; message?: string } | { outcome: Outcome };

/** How a withdraw was answered: cancelled for good, or held by the worker, which ends it. */
export type WithdrawAnswer = "cancelled" | "held" | "finished";

type State = "waiting" | "attached" | "held" | "done";

interface Entry {
  /** Absent for a request withdrawn before it ever reached this worker. */
  request?: SaveRequest;
  state: State;
  report: Report;
  doneAt?: number;
}

/** How long a finished request's outcome is kept for the controller's next read: 10 minutes. */
export const outcomeRetentionMs = 10 * 60_000;

/** What a waiting request weighs against the branch budget besides its message. */
export const requestChargeBytes = 1024;

export class SaveDesk {
  private readonly queue = new AttachQueue();
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly onReport: (id: string, report: Report) => void) {}

  report(id: string): Report | undefined {
    return this.entries.get(id)?.report;
  }

  request(id: string): SaveRequest | undefined {
    return this.entries.get(id)?.request;
  }

  /** Registers an attach (a re-send of a known request changes nothing), deciding against the open window. */
  register(request: SaveRequest, now: number, open: OpenWindowView | undefined): RegisterDecision {
    if (this.entries.has(request.id)) return { kind: "known" };
    const decision = this.queue.register(request, now, open);
    if (decision.kind === "known") return decision;
    const attached = decision.kind === "attach";
    this.set(request.id, {
      request,
      state: attached ? "attached" : "waiting",
      report: { phase: "WaitingForWindow" },
    });
    if (attached) this.attached(request.id);
    return decision;
  }

  /** A window opened at `now`: the requests it outlived expire first, then the first it matches attaches. */
  windowOpened(
    window: OpenWindowView,
    now: number,
  ): { expired: [string, Unattached][]; attach?: SaveRequest } {
    const { expired, attach } = this.queue.windowOpened(window, now);
    if (attach === undefined) return { expired };
    this.attached(attach);
    return { expired, attach: this.entries.get(attach)!.request! };
  }

  /** The waiting requests whose attach deadline has passed. */
  expire(now: number): [string, Unattached][] {
    return this.queue.expire(now);
  }

  nextDeadline(): number | undefined {
    return this.queue.nextDeadline();
  }

  /** The request's window closed into a decided write: it waits for that write's push. */
  held(id: string, message?: string): void {
    const entry = this.entries.get(id);
    if (!entry || entry.state === "done") return;
    entry.state = "held";
    this.update(id, entry, { phase: "WaitingForPush", ...(message ? { message } : {}) });
  }

  /** The request ended: its outcome is kept for the controller to read. */
  finish(id: string, outcome: Outcome, now: number): void {
    const entry = this.entries.get(id);
    if (!entry || entry.state === "done") return;
    this.queue.withdraw(id);
    entry.state = "done";
    entry.doneAt = now;
    this.update(id, entry, { outcome });
  }

  /**
   * Withdraws a request the worker does not hold: cancelled for good, so a late attach never
   * registers it again. A held one is left to the worker, which ends it.
   */
  withdraw(id: string, now: number, message: string): WithdrawAnswer {
    const entry = this.entries.get(id);
    if (entry?.state === "done") return "finished";
    if (entry?.state === "attached" || entry?.state === "held") return "held";
    const outcome: Outcome = { reason: "FinalizeFailed", message };
    this.queue.withdraw(id);
    this.set(id, { request: entry?.request, state: "done", report: { outcome }, doneAt: now });
    return "cancelled";
  }

  /** The requests the worker holds: attached to the open window, or riding a decided write. */
  heldIds(): string[] {
    return [...this.entries]
      .filter(([, e]) => e.state === "held" || e.state === "attached")
      .map(([id]) => id);
  }

  /**
   * A stopping worker gives back every request still waiting: forgotten, so the controller's
   * next attach registers it with whichever worker serves the GitTarget then.
   */
  giveBack(): string[] {
    const given: string[] = [];
    for (const [id, entry] of this.entries) {
      if (entry.state !== "waiting") continue;
      this.entries.delete(id);
      this.queue.forget(id);
      given.push(id);
    }
    return given;
  }

  /** Forgets outcomes kept past their retention. */
  sweep(now: number): void {
    for (const [id, entry] of this.entries) {
      if (entry.state !== "done" || now - entry.doneAt! < outcomeRetentionMs) continue;
      this.entries.delete(id);
      this.queue.forget(id);
    }
  }

  /** What the waiting requests weigh, for the branch budget: a stream of empty saves counts too. */
  waitingBytes(): number {
    let bytes = 0;
    for (const entry of this.entries.values())
      if (entry.state === "waiting") bytes += requestChargeBytes + (entry.request?.message?.length ?? 0);
    return bytes;
  }

  private attached(id: string): void {
    const entry = this.entries.get(id)!;
    entry.state = "attached";
    this.update(id, entry, { phase: "CollectingWindow" });
  }

  private set(id: string, entry: Entry): void {
    this.entries.set(id, entry);
    this.onReport(id, entry.report);
  }

  private update(id: string, entry: Entry, report: Report): void {
    entry.report = report;
    this.onReport(id, report);
  }
}
