// The branch workers of one process: one per repository branch, for the GitBranch that holds
// it, each with its clone under the root by GitBranch uid. The GitBranch reconciler makes,
// replaces and releases its branch's worker; GitTargets attach their streams to it while it
// runs, and hear when it starts, is replaced or goes (onWorkerChanged). A worker whose
// repository identity changes (its GitProvider recreated, its credential rotated) is replaced:
// the old one publishes what it decided, and takes its clone with it. A clone directory is
// claimed by its owner file (workerdirs.ts), and the sweep leaves every directory another
// running process owns. Each worker reports to its branch's observer (worker/observer.ts), which
// the process makes: metrics and logs.
import { readdir } from "node:fs/promises";
import type { TargetWriteState, WorkerManagerOptions, WorkerSpec } from "./workeroptions.ts";
import { join } from "node:path";
import { FolderRenders } from "../kustomize/renders.ts";
import { kustomizationReferences } from "../manifest/index.ts";
import type { Runnable } from "../operator/manager.ts";
import type { TargetRef } from "../rulestore/compile.ts";
import type { GitTargetEventStream } from "../stream/stream.ts";
import { BranchWorker } from "./worker/branchworker.ts";
import type { BranchState } from "./worker/report.ts";
import { Clone } from "./engine/clone.ts";
import type { Unpublished } from "./worker/publication.ts";
import { commitMessageFor } from "./folder/message.ts";
import type { MaterializeOptions } from "./folder/materialize.ts";
import { branchWakesTarget, reportWakesTarget } from "./targetwake.ts";
import { StreamReaders } from "./streamreaders.ts";
import { SaveRoutes } from "./saveroutes.ts";
import { WorkerRuns, type AttachOutcome } from "./workerruns.ts";
import { claimDirectory, directoriesIn, ownershipOf, removeDirectory, sweepRemoves } from "./workerdirs.ts";
import type { TargetSettings } from "./folder/writes.ts";
import type { Applier, Covered } from "../applier/decide/index.ts";
import { unobserved, type BranchObserver } from "./worker/observer.ts";
import { Exclusions } from "./folder/coordinated.ts";
import type { Applies, BranchApplies } from "./worker/applies.ts";
import { claimKey, type ClaimRef } from "../types/claims.ts";
import { untilAborted } from "../timing/sleep.ts";
import { keyOf as targetKey, parseKey } from "../types/names.ts";
import { errorText } from "../telemetry/errortext.ts";

export { defaultWorkerRoot } from "./workerdirs.ts";
export type { TargetWriteState, WorkerManagerOptions, WorkerSpec } from "./workeroptions.ts";

interface Attachment {
  branchKey: string;
  stream: GitTargetEventStream;
  settings: { current: TargetSettings };
}

const sameRecipients = (a: TargetSettings, b: TargetSettings) =>
  (a.encryption?.recipients ?? []).join(",") === (b.encryption?.recipients ?? []).join(",");

/** How EncryptionConfigured names a sensitive object it refused. */
const refusedEntry = (identity: { resource: string; namespace: string; name: string }) =>
  `${identity.resource} ${identity.namespace}/${identity.name}`;

export class WorkerManager implements Runnable {
  readonly name = "branch-workers";
  readonly needLeaderElection = true;
  private readonly workers = new Map<
    string,
    { spec: WorkerSpec; worker: BranchWorker; observer: BranchObserver }
  >();
  private readonly attachments = new Map<string, Attachment>();
  /** Which excluded objects were reported, so each is logged and counted once by the process. */
  private readonly exclusions = new Exclusions();
  private readonly readers = new StreamReaders(
    (stream) => {
      for (const attachment of this.attachments.values()) {
        const worker = attachment.stream === stream ? this.worker(attachment.branchKey) : undefined;
        if (worker) return { worker, settings: attachment.settings.current };
      }
      return undefined;
    },
    (settings, excluded) => {
      // Marked seen only once reported: a target between two workers reports them again later.
      const attachment = this.attachments.get(settings.key);
      const observer = attachment && this.workers.get(attachment.branchKey)?.observer;
      if (!observer) return;
      const first = this.exclusions.firstSeen(settings.key, excluded);
      if (first.length > 0) observer.excluded(settings.key, first);
    },
  );
  private readonly targetStates = new Map<string, TargetWriteState>();
  private readonly targetListeners: ((target: TargetRef) => void)[] = [];
  /** What each running worker last reported, by GitBranch namespace/name, for the GitBranch's status. */
  private readonly branchStates = new Map<string, BranchState>();
  private readonly branchListeners: ((branchKey: string) => void)[] = [];
  /** Told when a GitBranch's worker starts, is replaced, is held or is released. */
  private readonly workerListeners: ((branchKey: string) => void)[] = [];
  /** Which workers are held, and which GitBranches a served GitTarget asked a worker of. */
  private readonly runs = new WorkerRuns();
  /** Which worker each CommitRequest's attach went to. */
  readonly saves = new SaveRoutes((key) => {
    const attachment = this.attachments.get(key);
    const worker = attachment && this.worker(attachment.branchKey);
    return worker ? { worker, settings: attachment.settings.current } : undefined;
  });
  private started = false;
  /** Claims and sweeps take turns, so a sweep never removes a directory a worker is being made for. */
  private turns: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: WorkerManagerOptions) {}

  /** The write side's state of a GitTarget (namespace/name), once it has written or refused. */
  targetState(key: string): TargetWriteState | undefined {
    return this.targetStates.get(key);
  }

  isAttached(target: TargetRef): boolean {
    return this.attachments.has(targetKey(target));
  }

  /** Each attached GitTarget (namespace/name) with the GitBranch whose worker writes it. */
  *branchTargets(): Generator<{ branchKey: string; targetKey: string }> {
    for (const [targetKey, { branchKey }] of this.attachments) yield { branchKey, targetKey };
  }

  /** Every running worker's last report, by GitBranch namespace/name. */
  *branches(): Generator<[branchKey: string, state: BranchState]> {
    yield* this.branchStates;
  }

  /** What a GitBranch's running worker last reported: its backlog, intake and outage. */
  branchState(branchKey: string): BranchState | undefined {
    return this.branchStates.get(branchKey);
  }

  /** Calls `listener` when a worker's backlog, intake or outage changes. */
  onBranchChanged(listener: (branchKey: string) => void): void {
    this.branchListeners.push(listener);
  }

  /**
   * Calls `listener` when a GitBranch's worker starts, is replaced (a new spec), is held or is
   * released: the GitTargets on the branch attach to it, or learn that they feed none.
   */
  onWorkerChanged(listener: (branchKey: string) => void): void {
    this.workerListeners.push(listener);
  }

  private workerChanged(branchKey: string): void {
    for (const listener of this.workerListeners) listener(branchKey);
  }

  /** Calls `listener` when a target's write state changes: a push landed, or an object was refused. */
  onTargetChanged(listener: (target: TargetRef) => void): void {
    this.targetListeners.push(listener);
  }

  /**
   * Updates a target's write state. Its listeners hear of it when `wakes`, judged on the state
   * before the update, says its status shows what changed.
   */
  private updateTarget(
    key: string,
    update: (state: TargetWriteState) => void,
    wakes?: (before: TargetWriteState) => boolean,
  ): void {
    const state = this.targetStates.get(key) ?? { refused: new Set<string>() };
    const quiet = !(wakes?.(state) ?? true);
    update(state);
    this.targetStates.set(key, state);
    if (quiet) return;
    const { namespace, name } = parseKey(key);
    for (const listener of this.targetListeners) listener({ namespace, name });
  }

  worker(branchKey: string): BranchWorker | undefined {
    return this.workers.get(branchKey)?.worker;
  }

  /**
   * Calls `listener` the first time a served GitTarget finds no worker for its GitBranch: the
   * GitBranch reconciler makes one (ensure), which it does only once one is asked for.
   */
  onWorkerWanted(listener: (branchKey: string) => void): void {
    this.runs.onAsked(listener);
  }

  /** Whether a served GitTarget asked for the GitBranch's worker. */
  wanted(branchKey: string): boolean {
    return this.runs.wanted(branchKey);
  }

  /** Whether a worker runs for a GitBranch (namespace/name); with `uid`, for that GitBranch's uid. */
  has(branchKey: string, uid?: string): boolean {
    const entry = this.workers.get(branchKey);
    return entry !== undefined && (uid === undefined || entry.spec.uid === uid);
  }

  /** Whether this replica may run a GitBranch's worker: always, unless the branches are shared out and another holds it. */
  mayRun(branchKey: string): boolean {
    return this.options.holds?.(branchKey) ?? true;
  }

  private inTurn<T>(work: () => T | Promise<T>): Promise<T> {
    const turn = this.turns.then(work);
    this.turns = turn.catch(() => undefined);
    return turn;
  }

  /**
   * The worker for a GitBranch, created or replaced to match `spec`, and taking targets again if
   * it was held; only the GitBranch reconciler calls it. The GitTargets on the branch hear of a
   * new or resumed worker (onWorkerChanged).
   */
  ensure(spec: WorkerSpec): Promise<BranchWorker> {
    return this.inTurn(async () => {
      const before = this.worker(spec.key);
      const worker = await this.make(spec);
      const resumed = this.runs.resume(spec.key);
      // A reader that looked for the branch's worker while it was being replaced waits for it.
      for (const attachment of this.attachments.values())
        if (attachment.branchKey === spec.key) this.readers.attached(attachment.stream);
      if (worker !== before || resumed) this.workerChanged(spec.key);
      return worker;
    });
  }

  /**
   * Holds a GitBranch's running worker, which its GitBranch cannot run now (`reason`): its
   * targets are detached and none attaches until the GitBranch makes it again (ensure). The
   * worker keeps what it decided and goes on publishing it; stopping it would drop, without
   * Redis, every write it has not pushed.
   */
  hold(branchKey: string, reason: string): Promise<void> {
    return this.inTurn(() => {
      if (!this.workers.has(branchKey) || !this.runs.hold(branchKey, reason)) return;
      this.detachBranch(branchKey);
      this.workerChanged(branchKey);
    });
  }

  private async make(spec: WorkerSpec): Promise<BranchWorker> {
    const existing = this.workers.get(spec.key);
    if (existing && existing.spec.identity === spec.identity && existing.spec.uid === spec.uid)
      return existing.worker;
    if (existing) await this.stopWorker(spec.key);
    if (this.options.holds && !this.options.holds(spec.key))
      throw new Error(`GitBranch ${spec.key}: another replica holds its branch`);
    await claimDirectory(this.options.root, spec.uid);
    const {
      root,
      sweepIntervalMs: _sweep,
      namedByGitBranch: _named,
      additionalSensitive: _sensitive,
      observer: observe,
      kustomizePath: _kustomize,
      onBranchPublished,
      onBranchProved,
      onBranchState: _state,
      callTimeoutMs,
      folders,
      applies,
      writeLog,
      mayPush,
      ...workerOptions
    } = this.options;
    const observer = observe?.(spec.key) ?? unobserved;
    const worker = new BranchWorker({
      ...workerOptions,
      observer,
      clone: new Clone({
        dir: join(root, spec.uid),
        url: spec.url,
        branch: spec.branch,
        parentBranch: spec.parentBranch,
        ...(spec.push ? { push: spec.push } : {}),
        auth: spec.auth,
        callTimeoutMs,
        ...(spec.signingKey ? { signingKey: spec.signingKey } : {}),
        buildsFrom: kustomizationReferences,
      }),
      committer: spec.committer,
      // Configured-author mode: the author is the committer until attribution names an actor.
      materialize: this.materializeOptions(spec),
      onPublished: (commit, writes) => {
        const at = new Date();
        for (const key of new Set(writes.map((w) => w.target.key)))
          this.updateTarget(key, (s) => (s.lastPushAt = at));
        // A push to a review ref left the branch where it was: it proves nothing of the branch.
        if (spec.push?.refspec === undefined) onBranchPublished?.(spec.key, commit);
      },
      onProved: (commit, by) => onBranchProved?.(spec.key, commit, by),
      onSave: (id) => this.saves.reported(id),
      ...(mayPush ? { mayPush: () => mayPush(spec.key) } : {}),
      ...(writeLog ? { queue: { log: writeLog(spec.key) } } : {}),
      ...(applies ? { applies: this.applyHooks(spec, applies) } : {}),
      onState: (state) => this.branchStateChanged(spec.key, state),
      folders: {
        onReport: (key, report, byWrite) =>
          this.updateTarget(
            key,
            (s) => (s.folder = report),
            (before) => reportWakesTarget(before.folder, report, byWrite),
          ),
        onResyncRequested: (...args) => folders?.onResyncRequested?.(...args),
      },
    });
    this.workers.set(spec.key, { spec, worker, observer });
    if (this.started) worker.start();
    // A replaced worker leaves what it could not publish in the durable queue, and the streams
    // attached to its branch are read on into the new one: it replays their entries first.
    if (existing)
      for (const attachment of this.attachments.values())
        if (attachment.branchKey === spec.key) void worker.replay(attachment.settings.current);
    return worker;
  }

  /** How a branch's worker writes its folders: its committer, renders, and the refusals its targets report. */
  private materializeOptions(spec: WorkerSpec): MaterializeOptions {
    const { additionalSensitive, kustomizePath } = this.options;
    return {
      committer: spec.committer,
      additionalSensitive,
      renders: kustomizePath ? new FolderRenders({ binary: kustomizePath }) : undefined,
      onRefused: (write, identity, reason) => {
        // EncryptionConfigured reports what encryption would have let through; a write that
        // had nowhere to land is logged and counted by its reason, through the observer.
        if (reason !== "encryption_unavailable" && reason !== "encryption_failed") return;
        this.updateTarget(write.target.key, (s) => s.refused.add(refusedEntry(identity)));
      },
      onEncrypted: (write, identity) => {
        const entry = refusedEntry(identity);
        if (this.targetStates.get(write.target.key)?.refused.has(entry))
          this.updateTarget(write.target.key, (s) => s.refused.delete(entry));
      },
      message: commitMessageFor(spec.committer, this.options.logger),
    };
  }

  /** The process's applies, as one branch's worker asks them: for its branch, with its appliers. */
  private applyHooks(spec: WorkerSpec, applies: Applies): BranchApplies {
    return {
      applies,
      branch: { key: spec.key, url: spec.url, branch: spec.branch },
      appliers: () => this.appliersOf(spec.key),
    };
  }

  /** A branch's worker reported its state: every target on the branch hears it, and a paused branch's watches stop reading. */
  private branchStateChanged(branchKey: string, state: BranchState): void {
    this.options.onBranchState?.(branchKey, state);
    this.branchStates.set(branchKey, state);
    for (const listener of this.branchListeners) listener(branchKey);
    for (const [key, attachment] of this.attachments) {
      if (attachment.branchKey !== branchKey) continue;
      // A paused branch's watches stop reading, with their cursors kept, until a push lands.
      if (state.intakePaused) attachment.stream.pause();
      else attachment.stream.resume();
      this.updateTarget(
        key,
        (s) => (s.branch = state),
        (before) => branchWakesTarget(before.branch, state),
      );
    }
  }

  /**
   * Feeds a GitTarget's stream to its GitBranch's worker if one runs for that GitBranch (`uid`)
   * and takes targets, once a creation or replacement under way is done, so a target never finds
   * its branch between two workers; else why not. Never makes a worker: when none runs, the
   * GitBranch reconciler hears that a served target asks for one (onWorkerWanted).
   */
  attachRunning(
    target: TargetRef,
    branch: { key: string; uid: string },
    settings: TargetSettings,
    stream: GitTargetEventStream,
  ): Promise<AttachOutcome> {
    return this.inTurn((): AttachOutcome => {
      if (!this.has(branch.key, branch.uid)) {
        this.runs.ask(branch.key);
        return { attached: false, reason: `its GitBranch ${branch.key} runs no branch worker yet` };
      }
      const held = this.runs.heldFor(branch.key);
      if (held !== undefined)
        return { attached: false, reason: `its GitBranch ${branch.key}'s worker takes no target: ${held}` };
      this.attach(target, branch.key, settings, stream);
      return { attached: true };
    });
  }

  /**
   * Feeds a GitTarget's stream to its branch's worker. Attaching the same stream again only
   * updates the target's settings (its window timers, its prune mode).
   */
  attach(target: TargetRef, branchKey: string, settings: TargetSettings, stream: GitTargetEventStream): void {
    const key = targetKey(target);
    const current = this.attachments.get(key);
    if (current && current.stream === stream && current.branchKey === branchKey) {
      // Resumed: what the worker takes from here on is written, and every collection replays.
      if (current.settings.current.suspend && !settings.suspend) this.worker(branchKey)?.resume(settings);
      // New recipients: every sensitive document is encrypted again, by a fresh snapshot. A
      // claim named since: a fresh snapshot founds the folder its applier will apply.
      const claimed = settings.claim && !current.settings.current.claim;
      if (claimed || !sameRecipients(current.settings.current, settings))
        this.options.folders?.onResyncRequested?.(key, undefined);
      current.settings.current = settings;
      // Its reader may wait for a worker that was replaced under it: it goes on now.
      this.readers.attached(stream);
      return;
    }
    const worker = this.worker(branchKey);
    if (!worker) throw new Error(`no worker for GitBranch ${branchKey}`);
    this.attachments.set(key, { branchKey, stream, settings: { current: settings } });
    stream.collecting = () => this.worker(branchKey)?.collecting();
    this.readers.attached(stream);
  }

  /**
   * The appliers on a branch: each FluxClaim and ArgoCDClaim its attached GitTargets name, with
   * the targets it covers and whether each has settled its snapshots.
   */
  private appliersOf(branchKey: string): Applier[] {
    const applies = this.options.applies!;
    const byClaim = new Map<string, Applier & { targets: Covered[] }>();
    for (const [key, attachment] of this.attachments) {
      const claim = attachment.settings.current.claim;
      if (attachment.branchKey !== branchKey || !claim) continue;
      const ref: ClaimRef = { kind: claim.kind, namespace: claim.namespace, name: claim.name };
      const byKey = claimKey(ref);
      let applier = byClaim.get(byKey);
      if (!applier) {
        applier = {
          claim: ref,
          source: applies.sourceOf(ref) ?? byKey,
          holds: applies.holds(ref),
          targets: [],
        };
        byClaim.set(byKey, applier);
      }
      const target = parseKey(key);
      applier.targets.push({
        uid: claim.targetUid,
        ref: target,
        // Published means published: every collection's snapshot taken, and none left in the worker.
        published: applies.snapshotsSettled(target) && !this.worker(branchKey)?.holdsResync(key),
        ...(claim.onRefusal ? { onRefusal: claim.onRefusal } : {}),
      });
    }
    return [...byClaim.values()];
  }

  /** Has a GitBranch's worker prove where its branch is now, as reconcile.configbutler.ai/requestedAt asks. */
  refresh(branchKey: string): void {
    this.worker(branchKey)?.refresh();
  }

  /** A push delivery named a GitBranch's branch: whether a worker of this process was woken. */
  notice(branchKey: string): boolean {
    this.worker(branchKey)?.notice();
    return this.workers.has(branchKey);
  }

  /**
   * Has a refused folder read again, so a fix pushed to Git clears the refusal; with `request`
   * (a requestedAt) any folder, recorded as handledRequest once it has been read.
   */
  recheck(target: TargetRef, settings: TargetSettings, request?: string): void {
    const key = targetKey(target);
    const attachment = this.attachments.get(key);
    if (!attachment) return;
    const done =
      request === undefined
        ? undefined
        : () => {
            if (this.attachments.get(key) === attachment)
              this.updateTarget(key, (s) => (s.handledRequest = request));
          };
    this.worker(attachment.branchKey)?.recheck(settings, done);
  }

  detach(target: TargetRef): void {
    this.attachments.delete(targetKey(target));
    this.targetStates.delete(targetKey(target));
  }

  /**
   * Stops a GitBranch's worker and removes its clone, as when the branch is given up; the
   * GitTargets on the branch hear of it (onWorkerChanged).
   */
  async release(branchKey: string): Promise<Unpublished | undefined> {
    const running = this.workers.has(branchKey);
    this.detachBranch(branchKey);
    this.runs.forget(branchKey);
    const unpublished = await this.stopWorker(branchKey);
    if (running) this.workerChanged(branchKey);
    return unpublished;
  }

  /** Detaches every target feeding the GitBranch's worker. */
  private detachBranch(branchKey: string): void {
    for (const [key, attachment] of this.attachments)
      if (attachment.branchKey === branchKey) this.attachments.delete(key);
  }

  async start(signal: AbortSignal): Promise<void> {
    this.started = true;
    for (const { worker } of this.workers.values()) worker.start();
    const sweep = setInterval(() => {
      this.sweep().catch((err: unknown) =>
        this.options.logger.error("worker sweep failed", { error: errorText(err) }),
      );
    }, this.options.sweepIntervalMs ?? 60_000);
    await untilAborted(signal);
    clearInterval(sweep);
    this.started = false;
    await Promise.all([...this.workers.values()].map(({ worker }) => worker.stop()));
  }

  /**
   * Removes every clone directory no live worker uses and no existing GitBranch names (a
   * GitBranch deleted while no worker ran), unless another running process owns it.
   */
  sweep(): Promise<void> {
    return this.inTurn(async () => {
      const { root, namedByGitBranch } = this.options;
      const inUse = new Set([...this.workers.values()].map((w) => w.spec.uid));
      const entries = await readdir(root).catch(() => [] as string[]);
      for (const uid of directoriesIn(entries)) {
        const facts = {
          inUse: inUse.has(uid),
          namedByGitBranch: namedByGitBranch?.(uid) ?? false,
          owner: (await ownershipOf(root, uid)).owner,
        };
        if (sweepRemoves(facts)) await removeDirectory(root, uid);
      }
    });
  }

  private async stopWorker(branchKey: string): Promise<Unpublished | undefined> {
    const entry = this.workers.get(branchKey);
    if (!entry) return undefined;
    this.workers.delete(branchKey);
    const unpublished = await entry.worker.stop();
    this.branchStates.delete(branchKey);
    await removeDirectory(this.options.root, entry.spec.uid);
    return unpublished;
  }
}
