// What a branch worker is made from and what the process gives the WorkerManager: a GitBranch's
// WorkerSpec (which internal/gitbranch/workerspec.ts builds from the GitBranch and its
// provider's Secrets), the manager's options (where clones live, what each worker reports to,
// how applies are carried out, the durable queue, the shard checks), and what the write side
// tells a GitTarget's status. Nouns only: workermanager.ts does the work.
import type { BranchWorkerOptions } from "./worker/branchworker.ts";
import type { BranchState } from "./worker/report.ts";
import type { CloneOptions } from "./engine/clone.ts";
import type { Signature } from "../types/signature.ts";
import type { SigningKey } from "../signing/sshkey.ts";
import type { FolderReport, TargetFolderCallbacks } from "./folder/targetfolders.ts";
import type { BranchObserver } from "./worker/observer.ts";
import type { Applies } from "./worker/applies.ts";
import type { WriteLog } from "./queue/writelog.ts";

export interface WorkerSpec {
  /** The GitBranch, as namespace/name. */
  key: string;
  /** The GitBranch's uid: the clone's directory, so a recreated GitBranch starts afresh. */
  uid: string;
  url: string;
  branch: string;
  /** GitBranch spec.parentBranch: where a missing branch is created from. */
  parentBranch?: string;
  /**
   * GitBranch spec.push: the review ref pushed instead of the branch, and the push options sent
   * with every push. With a review ref the branch is only fetched, and no applier is asked.
   */
  push?: CloneOptions["push"];
  auth: CloneOptions["auth"];
  committer: Signature;
  /** GitProvider spec.commit.signing's key: every commit pushed is signed with it. */
  signingKey?: SigningKey;
  /** What the worker's trust belongs to: the provider's uid, its URL, the credential revision. */
  identity: string;
}

export interface WorkerManagerOptions extends Omit<
  BranchWorkerOptions,
  "clone" | "committer" | "materialize" | "folders" | "observer" | "applies" | "queue" | "mayPush"
> {
  /** --worker-root: where the clones live, one directory per GitBranch uid. */
  root: string;
  sweepIntervalMs?: number;
  /** Whether an existing GitBranch has this uid: its directory outlives a worker that is not running. */
  namedByGitBranch?: (uid: string) => boolean;
  /** resource.group names treated as sensitive besides core Secrets. */
  additionalSensitive: readonly string[];
  /**
   * Each GitBranch's observer (by namespace/name), made with its worker: what the worker
   * reports, and another applier's objects kept out of its targets' coordinated folders, for
   * metrics and logs. None: nobody hears.
   */
  observer?: (branchKey: string) => BranchObserver;
  /** --kustomize-path: the kustomize that judges folders as they render; none: as written. */
  kustomizePath?: string;
  /** Called after a push landed on a GitBranch's branch, with the new tip. */
  onBranchPublished?: (branchKey: string, commit: string) => void;
  /** Called when a refresh proved where a GitBranch's branch is without a push. */
  onBranchProved?: (branchKey: string, commit: string | undefined, by: "Fetch" | "Advertisement") => void;
  /** Called when a branch's backlog, intake or outage changes, for the GitBranch's remote status. */
  onBranchState?: (branchKey: string, state: BranchState) => void;
  /** How long a call to the Git server may take; two minutes unless a test shortens it. */
  callTimeoutMs?: number;
  /** The fresh snapshots every folder asks of the watch side. */
  folders?: Partial<Pick<TargetFolderCallbacks, "onResyncRequested">>;
  /** How the branches' applies are carried out; none: no worker asks an applier for anything. */
  applies?: Applies;
  /** Each GitBranch's durable write queue (by namespace/name); none: accepted writes live in memory only. */
  writeLog?: (branchKey: string) => WriteLog;
  /**
   * With more than one replica: whether this replica holds a GitBranch's repository branch. A
   * worker is never made for one it does not, so a reconcile that raced a handover cannot write
   * beside the replica that took the branch.
   */
  holds?: (branchKey: string) => boolean;
  /**
   * With more than one replica: why this replica may not push to a GitBranch's repository branch
   * now (its Lease is not safely held), asked right before every push; undefined: it may.
   */
  mayPush?: (branchKey: string) => string | undefined;
}

/** What the write side knows of one GitTarget, for its status. */
export interface TargetWriteState {
  /** Objects refused fail-safe, as resource namespace/name. */
  refused: Set<string>;
  lastPushAt?: Date;
  /** The folder's gates and placement, once the worker has read it. */
  folder?: FolderReport;
  /** The branch's worker, as every target on it reports it: its backlog, intake and outage. */
  branch?: BranchState;
  /** The last reconcile.configbutler.ai/requestedAt whose folder the worker read again. */
  handledRequest?: string;
}
