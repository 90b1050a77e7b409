// The branch worker's side of CommitRequest: it registers an attach against the open commit
// window, binds a waiting request to the next window of its author and GitTarget, carries the
// request's message on the write its window closes into, and decides its outcome from the push
// that publishes that write. Everything here runs on the worker's FIFO (branchworker.ts).
//
// The gates are read when the request resolves: a suspended GitTarget, a refused folder or a
// render-vs-live gate that has not passed fails it, whichever way it ended, because "no window"
// cannot be said of a target that drops its writes. WindowMismatch is the exception: another
// author's window refused it, and its reason says so.
import { SaveDesk, type Report, type SaveRequest, type WithdrawAnswer } from "../../commitrequest/desk.ts";
import type { OpenWindowView, Unattached } from "../../commitrequest/attach.ts";
import type { Outcome } from "../../commitrequest/outcome.ts";
import type { ClosedWindow, CommitWindow } from "./window.ts";
import type { WindowTimers, DecidedWrite, SaveOnWrite, TargetSettings } from "../folder/writes.ts";
import type { TargetFolders } from "../folder/targetfolders.ts";

export type { Report, SaveRequest, WithdrawAnswer } from "../../commitrequest/desk.ts";

/** What the saves need of their worker. */
export interface SaveHost {
  window: CommitWindow<unknown>;
  /** The branch the worker pushes, for status.branch. */
  branch: string;
  /** The folders' gates: refused, or render fidelity not established. */
  folders: Pick<TargetFolders, "writeGate">;
  /** Decides a window closed for a request (attach: Next): it becomes a write like any other. */
  decide(closed: ClosedWindow<unknown> | undefined): void;
  /** Keeps a CommitEmpty request's empty write until a push lands it. */
  retain(write: DecidedWrite): void;
  /** Whether the branch's intake is paused by its budget. */
  intakePaused(): boolean;
}

/** The timers a request's attach gives its window: no idle timeout unless it sets one. */
export function requestTimers(request: SaveRequest): WindowTimers {
  return { idleTimeoutMs: request.idleTimeoutMs ?? Infinity, maxDurationMs: request.maxDurationMs };
}

/** How a published (or settled) save ended, by what its write made on the remote. */
export function savedOutcome(write: DecidedWrite & { save: SaveOnWrite }, branch: string): Outcome {
  const { save } = write;
  if (save.refused !== undefined)
    return { reason: "FinalizeFailed", message: `The write was refused: ${save.refused}` };
  if (save.commit === undefined) return { reason: "AlreadyPresent" };
  if (!save.empty) return { reason: "Committed", commit: save.commit, branch };
  // An empty commit records the message: of a request no window reached, or one that changed nothing.
  return write.changes.length === 0
    ? { reason: "NoWindow", commit: save.commit, branch }
    : { reason: "AlreadyPresent", commit: save.commit, branch };
}

export class WorkerSaves {
  private readonly desk: SaveDesk;
  /** The GitTarget each registered request was sent for, as its settings were then. */
  private readonly targets = new Map<string, TargetSettings>();
  /** Each target's settings as its latest item or attach brought them: what the gates read. */
  private readonly latest = new Map<string, TargetSettings>();

  constructor(
    private readonly host: SaveHost,
    onReport: (id: string, report: Report) => void,
  ) {
    this.desk = new SaveDesk(onReport);
  }

  report(id: string): Report | undefined {
    return this.desk.report(id);
  }

  /** A target's latest settings, as an item brought them. */
  saw(target: TargetSettings): void {
    this.latest.set(target.key, target);
  }

  /** An attach, or its re-send: registered against the window open now. */
  attach(target: TargetSettings, request: SaveRequest, now: number): void {
    this.saw(target);
    if (this.desk.report(request.id) !== undefined) return;
    // A paused branch refuses new work; the controller sends the request again.
    if (this.host.intakePaused()) return;
    this.targets.set(request.id, target);
    const decision = this.desk.register(request, now, this.openView());
    if (decision.kind === "attach") this.host.window.attachRequest(request.id, requestTimers(request), now);
    else if (decision.kind === "closeThenWait") this.host.decide(this.host.window.close("request"));
    else if (decision.kind === "resolved") this.unattached(request.id, decision.outcome, now);
  }

  /** A write opened a window: requests past their deadline resolve first, then one may attach. */
  windowOpened(now: number): void {
    const view = this.openView();
    if (!view) return;
    const { expired, attach } = this.desk.windowOpened(view, now);
    for (const [id, outcome] of expired) this.unattached(id, outcome, now);
    if (attach) this.host.window.attachRequest(attach.id, requestTimers(attach), now);
  }

  expire(now: number): void {
    for (const [id, outcome] of this.desk.expire(now)) this.unattached(id, outcome, now);
    this.desk.sweep(now);
  }

  dueAt(): number | undefined {
    return this.desk.nextDeadline();
  }

  /** What waiting requests weigh against the branch budget. */
  bytes(): number {
    return this.desk.waitingBytes();
  }

  /**
   * A window closed: the save its request puts on the write, or none. A gate closed while it
   * collected fails the request, and the write goes on without it.
   */
  closed(closed: ClosedWindow<unknown>, target: TargetSettings, now: number): SaveOnWrite | undefined {
    const id = closed.request;
    const request = id === undefined ? undefined : this.desk.request(id);
    if (!id || !request) return undefined;
    const gate = this.gate(target);
    if (gate) {
      this.desk.finish(id, { reason: "FinalizeFailed", message: gateMessage(gate) }, now);
      return undefined;
    }
    this.desk.held(id);
    return saveOf(request);
  }

  /** A push landed (or settled) these writes: each save among them has its outcome. */
  published(writes: readonly DecidedWrite[], now: number): void {
    for (const write of writes) {
      if (write.save)
        this.desk.finish(write.save.id, savedOutcome({ ...write, save: write.save }, this.host.branch), now);
    }
  }

  /** A publication failed and keeps these writes: each save among them says why it waits. */
  waiting(writes: readonly DecidedWrite[], error: string): void {
    for (const write of writes)
      if (write.save) this.desk.held(write.save.id, `The commit has not reached the remote yet: ${error}`);
  }

  withdraw(id: string, message: string, now: number): WithdrawAnswer {
    return this.desk.withdraw(id, now, message);
  }

  /**
   * The worker stops: waiting requests are given back for the next worker, and every request it
   * still holds fails, because nothing will publish it now.
   */
  stopped(now: number): void {
    for (const id of this.desk.giveBack()) this.targets.delete(id);
    for (const id of this.desk.heldIds()) {
      this.desk.finish(
        id,
        { reason: "FinalizeFailed", message: "The worker stopped before the commit reached the remote." },
        now,
      );
    }
  }

  /** A request that reached no window: NoWindow, WindowMismatch, or (CommitEmpty) an empty commit. */
  private unattached(id: string, outcome: Unattached, now: number): void {
    const request = this.desk.request(id)!;
    const target = this.targets.get(id)!;
    const gate = outcome === "NoWindow" ? this.gate(target) : undefined;
    if (gate) {
      this.desk.finish(id, { reason: "FinalizeFailed", message: gateMessage(gate) }, now);
    } else if (outcome === "NoWindow" && request.whenNothingToCommit === "CommitEmpty") {
      this.host.retain({ target, reason: "live", changes: [], save: saveOf(request) });
      this.desk.held(id);
    } else {
      this.desk.finish(id, { reason: outcome }, now);
    }
  }

  /** Why a target may not be written now, as a request's failure says it. */
  private gate(target: TargetSettings): string | undefined {
    const current = this.latest.get(target.key) ?? target;
    if (current.suspend) return "it is suspended (spec.suspend)";
    return this.host.folders.writeGate(current);
  }

  private openView(): OpenWindowView | undefined {
    const { window } = this.host;
    const owner = window.owner;
    if (!owner) return undefined;
    return { target: owner.target, actor: owner.actor, attached: window.request !== undefined };
  }
}

const saveOf = (request: SaveRequest): SaveOnWrite => ({
  id: request.id,
  ...(request.message !== undefined ? { message: request.message } : {}),
  commitEmpty: request.whenNothingToCommit === "CommitEmpty",
});

const gateMessage = (gate: string) => `The GitTarget may not be written: ${gate}.`;
