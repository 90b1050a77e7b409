// Which write-side changes wake a GitTarget's reconciler. Delivery is not publication: a status
// write is an etcd write every watcher of the type pays for, so a change the target's status
// does not show wakes nothing, and a local commit is shown once its push lands.
import type { BranchState } from "./worker/report.ts";
import { contentionFacts } from "./worker/contention.ts";
import { outageFacts } from "./worker/outage.ts";
import type { FolderReport } from "./folder/targetfolders.ts";

/**
 * Whether a branch's new state changes what its GitTargets show: an outage or a contention,
 * with the writes they hold. The backlog alone moves with every write, and is not shown.
 */
export function branchWakesTarget(before: BranchState | undefined, after: BranchState): boolean {
  return branchShown(before) !== branchShown(after);
}

/**
 * Whether a folder report wakes its GitTarget. A report a read of the folder made always does.
 * A write's report moves where the folder was read (the commit, when, how many documents) with
 * every commit; the push that follows publishes that, and wakes the target anyway. With a commit
 * per change, a status write per commit was as many server-side applies as edits.
 */
export function reportWakesTarget(
  before: FolderReport | undefined,
  after: FolderReport,
  byWrite: boolean,
): boolean {
  return !byWrite || reportShown(before) !== reportShown(after);
}

const branchShown = (state: BranchState | undefined) =>
  JSON.stringify([outageFacts(state), contentionFacts(state)]);

const reportShown = (report: FolderReport | undefined) =>
  JSON.stringify(
    report && {
      ...report,
      placement: report.placement && {
        ...report.placement,
        commit: undefined,
        observedAt: undefined,
        documents: undefined,
      },
    },
  );
