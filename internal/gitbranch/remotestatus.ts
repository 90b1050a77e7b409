// Publishes where each branch is on the remote, as GitBranch.status.remote, and whether the
// worker's publications are failing. A status write invalidates every watcher's copy of the
// object, so a busy branch writes at most once a minute: the first observation at once, later
// ones as one trailing write. An outage starting or ending is written at once, as a person
// looking at the GitBranch acts on it.
import type { KubeConfig } from "@kubernetes/client-node";
import { gitBranches, type GitBranch } from "../../generated/v1alpha3/index.ts";
import type { Logger } from "../telemetry/logger.ts";
import type { BranchState, Outage } from "../git/index.ts";
import { parseKey } from "../types/names.ts";
import { errorText } from "../telemetry/errortext.ts";

/** The branch worker's own field manager, so its fields never collide with the GitBranch controller's. */
export const branchWorkerFieldManager = "gitops-reverser-branch-worker";

export type ProvedBy = "Push" | "Fetch" | "Advertisement";

/** What the stanza says of one branch: the last proof, and the outage the worker is in. */
interface Remote {
  proof?: { commit: string; provedBy: ProvedBy; at: Date };
  outage?: Pick<Outage, "since" | "error">;
  /** When a push delivery last named the branch. */
  noticedAt?: Date;
  /** On a branch pushed to a review ref: the last push that landed there. */
  review?: NonNullable<BranchState["reviewPush"]>;
}

type GitBranchRemote = NonNullable<NonNullable<GitBranch["status"]>["remote"]>;

/** The stanza, as the branch worker's field manager applies it: what it omits, apply removes. */
function remoteStanza(remote: Remote): GitBranchRemote {
  const { proof, outage } = remote;
  return {
    ...(proof
      ? { commit: proof.commit, lastVerifiedAt: proof.at.toISOString(), provedBy: proof.provedBy }
      : {}),
    ...(outage ? { failingSince: outage.since.toISOString(), lastError: outage.error } : {}),
  };
}

export class RemoteStatusPublisher {
  private readonly lastWrite = new Map<string, number>();
  private readonly remotes = new Map<string, Remote>();
  private readonly dirty = new Set<string>();
  private readonly timers = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly kubeConfig: KubeConfig,
    private readonly logger: Logger,
    private readonly minIntervalMs = 60_000,
  ) {}

  /** Records what a worker proved about its branch (namespace/name of the GitBranch). */
  record(branchKey: string, commit: string, provedBy: ProvedBy): void {
    const remote = this.remotes.get(branchKey);
    const proof = { commit, provedBy, at: new Date() };
    // A landed push ends the outage, so the stanza says both in one write.
    this.remotes.set(branchKey, { proof, outage: provedBy === "Push" ? undefined : remote?.outage });
    this.schedule(branchKey, provedBy === "Push" && remote?.outage !== undefined);
  }

  /** Records the worker's outage, or that it is over; its start and its end are written at once. */
  recordOutage(branchKey: string, outage: Outage | undefined): void {
    const remote = this.remotes.get(branchKey) ?? {};
    const same = remote.outage?.since.getTime() === outage?.since.getTime();
    if (same && remote.outage?.error === outage?.error) return;
    const transition = (remote.outage === undefined) !== (outage === undefined);
    this.remotes.set(branchKey, {
      ...remote,
      outage: outage && { since: outage.since, error: outage.error },
    });
    this.schedule(branchKey, transition);
  }

  /**
   * Records that a push delivery named the branch, as lastPushNoticeAt: receipt, whether or not
   * the look it causes can read the remote. The first of a burst is written at once.
   */
  recordNotice(branchKey: string): void {
    const remote = this.remotes.get(branchKey) ?? {};
    const quiet = (remote.noticedAt?.getTime() ?? -Infinity) + this.minIntervalMs <= Date.now();
    this.remotes.set(branchKey, { ...remote, noticedAt: new Date() });
    this.schedule(branchKey, quiet);
  }

  /** Records a push that landed on the branch's review ref (spec.push.refspec), as status.reviewPush. */
  recordReview(branchKey: string, review: NonNullable<BranchState["reviewPush"]>): void {
    const remote = this.remotes.get(branchKey) ?? {};
    if (remote.review?.commit === review.commit) return;
    this.remotes.set(branchKey, { ...remote, review });
    this.schedule(branchKey, remote.review === undefined);
  }

  /** Forgets a GitBranch that is gone, so one recreated under its name starts with no stanza. */
  forget(branchKey: string): void {
    clearTimeout(this.timers.get(branchKey));
    this.timers.delete(branchKey);
    this.remotes.delete(branchKey);
    this.dirty.delete(branchKey);
    this.lastWrite.delete(branchKey);
  }

  private schedule(branchKey: string, now: boolean): void {
    this.dirty.add(branchKey);
    const due = (this.lastWrite.get(branchKey) ?? -Infinity) + this.minIntervalMs;
    if (now || Date.now() >= due) {
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
    clearTimeout(this.timers.get(branchKey));
    this.timers.delete(branchKey);
    const remote = this.remotes.get(branchKey);
    if (!remote || !this.dirty.delete(branchKey)) return;
    this.lastWrite.set(branchKey, Date.now());
    const { namespace, name } = parseKey(branchKey);
    const stanza = remoteStanza(remote);
    try {
      await gitBranches(this.kubeConfig).applyStatus(
        {
          metadata: { name, namespace },
          status: {
            // Nothing proved and no outage yet (a push notice came first): no empty remote, which
            // the API server refuses.
            ...(Object.keys(stanza).length > 0 ? { remote: stanza } : {}),
            ...(remote.noticedAt ? { lastPushNoticeAt: toSeconds(remote.noticedAt) } : {}),
            ...(remote.review
              ? {
                  reviewPush: {
                    ref: remote.review.ref,
                    commit: remote.review.commit,
                    pushedAt: toSeconds(remote.review.at),
                  },
                }
              : {}),
          },
        } as GitBranch,
        branchWorkerFieldManager,
      );
    } catch (err) {
      this.logger.error("could not publish the branch's remote status", {
        gitBranch: branchKey,
        error: errorText(err),
      });
    }
  }
}

/** RFC 3339 to the second, as Kubernetes writes times. */
const toSeconds = (at: Date) => at.toISOString().replace(/\.\d{3}Z$/, "Z");
