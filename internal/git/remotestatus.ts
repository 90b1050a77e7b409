// Publishes where each branch is on the remote, as GitBranch.status.remote. A status write
// invalidates every watcher's copy of the object, so a busy branch writes at most once a
// minute: the first observation at once, later ones as one trailing write.
import type { KubeConfig } from "@kubernetes/client-node";
import { gitBranches, type GitBranch } from "../../generated/v1alpha3/index.ts";
import type { Logger } from "../operator/informer.ts";

/** The branch worker's own field manager, so its fields never collide with the GitBranch controller's. */
export const branchWorkerFieldManager = "gitops-reverser-branch-worker";

export type ProvedBy = "Push" | "Fetch" | "Advertisement";

interface Pending {
  commit: string;
  provedBy: ProvedBy;
  at: Date;
}

export class RemoteStatusPublisher {
  private readonly lastWrite = new Map<string, number>();
  private readonly pending = new Map<string, Pending>();
  private readonly timers = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly kubeConfig: KubeConfig,
    private readonly logger: Logger,
    private readonly minIntervalMs = 60_000,
  ) {}

  /** Records what a worker proved about its branch (namespace/name of the GitBranch). */
  record(branchKey: string, commit: string, provedBy: ProvedBy): void {
    this.pending.set(branchKey, { commit, provedBy, at: new Date() });
    const due = (this.lastWrite.get(branchKey) ?? -Infinity) + this.minIntervalMs;
    if (Date.now() >= due) {
      void this.flush(branchKey);
    } else if (!this.timers.has(branchKey)) {
      const timer = setTimeout(() => void this.flush(branchKey), due - Date.now());
      timer.unref();
      this.timers.set(branchKey, timer);
    }
  }

  /** Stops pending trailing writes. */
  stop(): void {
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }

  private async flush(branchKey: string): Promise<void> {
    this.timers.delete(branchKey);
    const observed = this.pending.get(branchKey);
    if (!observed) return;
    this.pending.delete(branchKey);
    this.lastWrite.set(branchKey, Date.now());
    const [namespace = "", name = ""] = branchKey.split("/");
    try {
      await gitBranches(this.kubeConfig).applyStatus(
        {
          metadata: { name, namespace },
          status: {
            remote: {
              commit: observed.commit,
              lastVerifiedAt: observed.at.toISOString(),
              provedBy: observed.provedBy,
            },
          },
        } as GitBranch,
        branchWorkerFieldManager,
      );
    } catch (err) {
      this.logger.error("could not publish the branch's remote status", {
        gitBranch: branchKey,
        error: String(err),
      });
    }
  }
}
