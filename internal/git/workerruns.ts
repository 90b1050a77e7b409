// Whether a GitBranch's worker takes GitTargets now, beside the workers themselves. Only the
// GitBranch reconciler makes a worker, and it makes one only once a served GitTarget asked for
// it (a GitTarget named the branch but nothing is watched for it yet: no clone is made for it).
// A running worker its GitBranch cannot run now (its credential or signing key unusable, its
// claim lost) is held, not stopped: it keeps what it decided and goes on publishing it, and
// takes no target until its GitBranch makes it again. Stopping it would drop, without Redis,
// every write it has not pushed.
export class WorkerRuns {
  /** Why a running worker takes no target now, by GitBranch namespace/name. */
  private readonly held = new Map<string, string>();
  /** GitBranches a served GitTarget asked to write through while no worker ran. */
  private readonly asked = new Set<string>();
  private readonly askedListeners: ((branchKey: string) => void)[] = [];

  /** Holds a running worker: true when it was taking targets until now. */
  hold(branchKey: string, reason: string): boolean {
    const was = this.held.has(branchKey);
    this.held.set(branchKey, reason);
    return !was;
  }

  /** Its GitBranch runs the worker again: true when it was held. */
  resume(branchKey: string): boolean {
    return this.held.delete(branchKey);
  }

  /** Why the GitBranch's worker takes no target now, if it is held. */
  heldFor(branchKey: string): string | undefined {
    return this.held.get(branchKey);
  }

  /** A served GitTarget asks for the GitBranch's worker; its listeners hear it the first time. */
  ask(branchKey: string): void {
    if (this.asked.has(branchKey)) return;
    this.asked.add(branchKey);
    for (const listener of this.askedListeners) listener(branchKey);
  }

  /** Whether a served GitTarget asked for the GitBranch's worker. */
  wanted(branchKey: string): boolean {
    return this.asked.has(branchKey);
  }

  onAsked(listener: (branchKey: string) => void): void {
    this.askedListeners.push(listener);
  }

  /** The worker is gone: what was asked or held of it goes with it. */
  forget(branchKey: string): void {
    this.held.delete(branchKey);
    this.asked.delete(branchKey);
  }
}

/** Whether a GitTarget's stream feeds its GitBranch's worker now, or why not. */
export type AttachOutcome = { attached: true } | { attached: false; reason: string };
