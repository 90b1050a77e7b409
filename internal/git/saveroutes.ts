// Where each CommitRequest went: the branch worker that accepted its attach. A withdraw and every
// read of its outcome go to that worker, not to whichever worker its GitTarget names now: a
// worker shared by several GitTargets outlives a deleted one, and a retired worker finishes its
// last push after the manager stopped listing it. Only a request no worker holds falls back to
// the GitTarget's worker.
import type { BranchWorker } from "./worker/branchworker.ts";
import type { Report, SaveRequest, WithdrawAnswer } from "./worker/saves.ts";
import type { TargetSettings } from "./folder/writes.ts";

/** The worker serving a GitTarget now, with the target's current settings. */
export type WorkerFor = (targetKey: string) => { worker: BranchWorker; settings: TargetSettings } | undefined;

export class SaveRoutes {
  private readonly accepted = new Map<string, BranchWorker>();
  private readonly listeners: ((id: string) => void)[] = [];

  constructor(private readonly workerFor: WorkerFor) {}

  /** Calls `listener` with a request's uid whenever its phase or outcome changes on a worker. */
  onChanged(listener: (id: string) => void): void {
    this.listeners.push(listener);
  }

  /** A worker's report changed. */
  reported(id: string): void {
    for (const listener of this.listeners) listener(id);
  }

  /**
   * Sends a request's attach (or its re-send) to the worker that accepted it, else to its
   * GitTarget's worker: false when the GitTarget has none.
   */
  attach(targetKey: string, request: SaveRequest): boolean {
    // Registered already: the worker would recognize the re-send as the same request. One that
    // gave the request back (it stopped before acting on it) no longer knows it.
    if (this.report(request.id) !== undefined) return true;
    const serving = this.workerFor(targetKey);
    if (!serving) return false;
    this.accepted.set(request.id, serving.worker);
    serving.worker.attachSave(serving.settings, request);
    return true;
  }

  /** Where the request is, or how it ended, as the worker that accepted it says. */
  report(id: string): Report | undefined {
    return this.accepted.get(id)?.saves.report(id);
  }

  /**
   * Withdraws a request from the worker that accepted it, else from its GitTarget's worker;
   * undefined when neither exists, so nothing can commit it.
   */
  async withdraw(id: string, targetKey: string, message: string): Promise<WithdrawAnswer | undefined> {
    const worker = this.accepted.get(id) ?? this.workerFor(targetKey)?.worker;
    return worker?.withdrawSave(id, message);
  }

  /** The request's outcome is written: nothing more is asked of its worker. */
  forget(id: string): void {
    this.accepted.delete(id);
  }
}
