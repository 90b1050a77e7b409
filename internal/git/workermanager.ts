// The branch workers of one process: one per repository branch, for the GitBranch that holds
// it, each with its clone under the root by GitBranch uid. GitTargets attach their streams to
// their branch's worker. A worker whose repository identity changes (its GitProvider recreated,
// its credential rotated) is replaced: the old one publishes what it decided, and takes its
// clone with it.
import { readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import type { Runnable } from "../operator/manager.ts";
import type { TargetRef } from "../rulestore/compile.ts";
import type { GitTargetEventStream } from "../watch/stream.ts";
import { BranchWorker, type BranchState, type BranchWorkerOptions } from "./branchworker.ts";
import { Clone, type Signature } from "./clone.ts";
import type { MaterializeOptions } from "./materialize.ts";
import { commitMessageFor } from "./message.ts";
import type { FolderReport, TargetFolderCallbacks } from "./targetfolders.ts";
import type { TargetSettings } from "./writes.ts";

export const defaultWorkerRoot = "/tmp/gitops-reverser-workers";

export interface WorkerSpec {
  /** The GitBranch, as namespace/name. */
  key: string;
  /** The GitBranch's uid: the clone's directory, so a recreated GitBranch starts afresh. */
  uid: string;
  url: string;
  branch: string;
  /** GitBranch spec.parentBranch: where a missing branch is created from. */
  parentBranch?: string;
  auth: { username: string; password: string } | undefined;
  committer: Signature;
  /** What the worker's trust belongs to: the provider's uid, its URL, the credential revision. */
  identity: string;
}

export interface WorkerManagerOptions extends Omit<
  BranchWorkerOptions,
  "clone" | "committer" | "materialize" | "folders"
> {
  root: string;
  sweepIntervalMs?: number;
  /** resource.group names treated as sensitive besides core Secrets. */
  additionalSensitive: readonly string[];
  onRefused: MaterializeOptions["onRefused"];
  /** Called after a push landed on a GitBranch's branch, with the new tip. */
  onBranchPublished?: (branchKey: string, commit: string) => void;
  /** Called when a refresh proved where a GitBranch's branch is without a push. */
  onBranchProved?: (branchKey: string, commit: string | undefined, by: "Fetch" | "Advertisement") => void;
  /** Called when a branch's backlog, intake or outage changes, for its metrics. */
  onBranchState?: (branchKey: string, state: BranchState) => void;
  /** How long a call to the Git server may take; two minutes unless a test shortens it. */
  callTimeoutMs?: number;
  /** Drops, placements and snapshot requests of every folder, for metrics and the watch side. */
  folders?: Partial<Omit<TargetFolderCallbacks, "onReport">>;
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
}

interface Attachment {
  branchKey: string;
  stream: GitTargetEventStream;
  settings: { current: TargetSettings };
}

const targetKey = (t: TargetRef) => `${t.namespace}/${t.name}`;

export class WorkerManager implements Runnable {
  readonly name = "branch-workers";
  readonly needLeaderElection = true;
  private readonly workers = new Map<string, { spec: WorkerSpec; worker: BranchWorker }>();
  private readonly attachments = new Map<string, Attachment>();
  private readonly targetStates = new Map<string, TargetWriteState>();
  private readonly targetListeners: ((target: TargetRef) => void)[] = [];
  private started = false;

  constructor(private readonly options: WorkerManagerOptions) {}

  /** The write side's state of a GitTarget (namespace/name), once it has written or refused. */
  targetState(key: string): TargetWriteState | undefined {
    return this.targetStates.get(key);
  }

  isAttached(target: TargetRef): boolean {
    return this.attachments.has(targetKey(target));
  }

  /** Calls `listener` when a target's write state changes: a push landed, or an object was refused. */
  onTargetChanged(listener: (target: TargetRef) => void): void {
    this.targetListeners.push(listener);
  }

  private updateTarget(key: string, update: (state: TargetWriteState) => void): void {
    const state = this.targetStates.get(key) ?? { refused: new Set<string>() };
    update(state);
    this.targetStates.set(key, state);
    const [namespace = "", name = ""] = key.split("/");
    for (const listener of this.targetListeners) listener({ namespace, name });
  }

  worker(branchKey: string): BranchWorker | undefined {
    return this.workers.get(branchKey)?.worker;
  }

  /** The worker for a GitBranch, created or replaced to match `spec`. */
  async ensure(spec: WorkerSpec): Promise<BranchWorker> {
    const existing = this.workers.get(spec.key);
    if (existing && existing.spec.identity === spec.identity && existing.spec.uid === spec.uid)
      return existing.worker;
    if (existing) await this.stopWorker(spec.key);
    const {
      root,
      sweepIntervalMs: _sweep,
      additionalSensitive,
      onRefused,
      onBranchPublished,
      onBranchProved,
      onBranchState,
      callTimeoutMs,
      folders,
      ...workerOptions
    } = this.options;
    const worker = new BranchWorker({
      ...workerOptions,
      clone: new Clone({
        dir: join(root, spec.uid),
        url: spec.url,
        branch: spec.branch,
        parentBranch: spec.parentBranch,
        auth: spec.auth,
        callTimeoutMs,
      }),
      committer: spec.committer,
      // Configured-author mode: the author is the committer until attribution names an actor.
      materialize: {
        committer: spec.committer,
        additionalSensitive,
        onRefused: (write, identity, reason, message) => {
          onRefused(write, identity, reason, message);
          // EncryptionConfigured reports what encryption would have let through; a write that
          // had nowhere to land is logged and counted by its reason.
          if (reason !== "encryption_unavailable") return;
          this.updateTarget(write.target.key, (s) =>
            s.refused.add(`${identity.resource} ${identity.namespace}/${identity.name}`),
          );
        },
        message: commitMessageFor(spec.committer, this.options.logger),
      },
      onPublished: (commit, writes) => {
        const at = new Date();
        for (const key of new Set(writes.map((w) => w.target.key)))
          this.updateTarget(key, (s) => (s.lastPushAt = at));
        onBranchPublished?.(spec.key, commit);
      },
      onProved: (commit, by) => onBranchProved?.(spec.key, commit, by),
      onState: (state) => {
        onBranchState?.(spec.key, state);
        for (const [key, attachment] of this.attachments) {
          if (attachment.branchKey !== spec.key) continue;
          // A paused branch's watches stop reading, with their cursors kept, until a push lands.
          if (state.intakePaused) attachment.stream.pause();
          else attachment.stream.resume();
          this.updateTarget(key, (s) => (s.branch = state));
        }
      },
      folders: {
        onReport: (key, report) => this.updateTarget(key, (s) => (s.folder = report)),
        onDropped: (...args) => folders?.onDropped?.(...args),
        onPlaced: (...args) => folders?.onPlaced?.(...args),
        onResyncRequested: (...args) => folders?.onResyncRequested?.(...args),
      },
    });
    this.workers.set(spec.key, { spec, worker });
    if (this.started) worker.start();
    return worker;
  }

  /**
   * Feeds a GitTarget's stream to its branch's worker. Attaching the same stream again only
   * updates the target's settings (its window timers, its prune mode).
   */
  attach(target: TargetRef, branchKey: string, settings: TargetSettings, stream: GitTargetEventStream): void {
    const key = targetKey(target);
    const current = this.attachments.get(key);
    if (current && current.stream === stream && current.branchKey === branchKey) {
      current.settings.current = settings;
      return;
    }
    const worker = this.worker(branchKey);
    if (!worker) throw new Error(`no worker for GitBranch ${branchKey}`);
    const attachment: Attachment = { branchKey, stream, settings: { current: settings } };
    this.attachments.set(key, attachment);
    void (async () => {
      for (;;) {
        // A branch whose budget is spent while it waits out an outage takes nothing more.
        await worker.intakeOpen();
        const next = await stream.next();
        if (next.done) return;
        // A detached or re-attached target stops feeding this worker.
        if (this.attachments.get(key) !== attachment) return;
        worker.enqueue(attachment.settings.current, next.value);
      }
    })();
  }

  /** Has a GitBranch's worker prove where its branch is now, as reconcile.configbutler.ai/requestedAt asks. */
  refresh(branchKey: string): void {
    this.worker(branchKey)?.refresh();
  }

  /** Has a refused folder read again, so a fix pushed to Git clears the refusal. */
  recheck(target: TargetRef, settings: TargetSettings): void {
    const attachment = this.attachments.get(targetKey(target));
    if (attachment) this.worker(attachment.branchKey)?.recheck(settings);
  }

  detach(target: TargetRef): void {
    this.attachments.delete(targetKey(target));
    this.targetStates.delete(targetKey(target));
  }

  /** Stops a GitBranch's worker and removes its clone, as when the branch is given up. */
  async release(branchKey: string): Promise<void> {
    for (const [key, attachment] of this.attachments)
      if (attachment.branchKey === branchKey) this.attachments.delete(key);
    await this.stopWorker(branchKey);
  }

  async start(signal: AbortSignal): Promise<void> {
    this.started = true;
    for (const { worker } of this.workers.values()) worker.start();
    const sweep = setInterval(() => {
      this.sweep().catch((err: unknown) =>
        this.options.logger.error("worker sweep failed", { error: String(err) }),
      );
    }, this.options.sweepIntervalMs ?? 60_000);
    await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
    clearInterval(sweep);
    this.started = false;
    await Promise.all([...this.workers.values()].map(({ worker }) => worker.stop()));
  }

  /** Removes every clone directory no live worker uses: a GitBranch deleted while no worker ran. */
  async sweep(): Promise<void> {
    const inUse = new Set([...this.workers.values()].map((w) => w.spec.uid));
    let entries: string[];
    try {
      entries = await readdir(this.options.root);
    } catch {
      return;
    }
    for (const entry of entries)
      if (!inUse.has(entry)) await rm(join(this.options.root, entry), { recursive: true, force: true });
  }

  private async stopWorker(branchKey: string): Promise<void> {
    const entry = this.workers.get(branchKey);
    if (!entry) return;
    this.workers.delete(branchKey);
    await entry.worker.stop();
    await rm(join(this.options.root, entry.spec.uid), { recursive: true, force: true });
  }
}
