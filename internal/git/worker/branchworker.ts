// One BranchWorker per repository branch. Every GitTarget on the branch feeds its single FIFO
// loop, so writes to the branch are serialized: live changes collect in the commit window,
// snapshots become resync writes, and decided writes are retained until a push lands, committed
// and pushed one commit each, with a push cooldown that batches bursts. A remote that cannot be
// reached keeps every retained write and is retried on its own schedule; while it is, intake is
// bounded by the branch budget. With a durable queue (../queue/), each live write it accepts is
// kept outside the process until nothing of it is held any more, and replayed after a crash.
// A branch pushed to a review ref (the clone's reviewRef) asks no applier for anything: what it
// pushes is a request to merge, and nothing of it is on the branch until the host merges it.
import type { Logger } from "../../telemetry/logger.ts";
import type { StreamItem } from "../../stream/stream.ts";
import type { Author, Signature } from "../../types/signature.ts";
import type { Repository } from "../engine/clone.ts";
import { DeliveryLooks, proveBranch, readFolders, type Refreshing } from "./refresh.ts";
import { identityKeyOf } from "../../types/identity.ts";
import type { MaterializeOptions, WorkTree } from "../folder/materialize.ts";
import { Publication, type Unpublished } from "./publication.ts";
import { RetrySchedule } from "./retry.ts";
import { Suspensions } from "./suspension.ts";
import { TargetFolders, type Intake, type TargetFolderCallbacks } from "../folder/targetfolders.ts";
import { IntakeGate, bytesOf, itemChargeBytes } from "./intakebudget.ts";
import type { BranchState, ReviewPush } from "./report.ts";
import { WorkerQueue } from "./workerqueue.ts";
import { InventoryStore } from "../folder/inventorystore.ts";
import { CommitWindow, type ClosedWindow } from "./window.ts";
import {
  RetainedWrites,
  liveChange,
  resyncWrite,
  type Change,
  type DecidedWrite,
  type TargetSettings,
} from "../folder/writes.ts";
import { WorkerSaves, type Report, type SaveRequest, type WithdrawAnswer } from "./saves.ts";
import { DurableWrites } from "../queue/durable.ts";
import type { WriteLog } from "../queue/writelog.ts";
import { oldestId } from "../queue/entryids.ts";
import { WorkerApplies, type AttemptReport, type BranchApplies } from "./applies.ts";
import type { CollectedWhile } from "../../types/applied.ts";
import { errorText } from "../../telemetry/errortext.ts";
import { unobserved, type BranchObserver } from "./observer.ts";

/** The seeds' fixed push cooldown: successful local commits wait this long after a push. */
export const defaultPushCooldownMs = 5_000;

export interface BranchWorkerOptions {
  clone: Repository & WorkTree;
  committer: Signature;
  /** --branch-buffer-max-size: what the branch may hold accepted and unpublished. */
  bufferLimitBytes: number;
  pushCooldownMs?: number;
  /** Attempts of one publication when the remote keeps moving. */
  pushAttempts?: number;
  /** Why this replica may not push to the branch now (the fence, asked right before each push); undefined: it may. */
  mayPush?: () => string | undefined;
  /** How long an idle branch waits before it proves where its remote is again: 10 minutes. */
  refreshIntervalMs?: number;
  /** How long shutdown's one publication may take, inside the pod's termination grace: 20 s. */
  shutdownGraceMs?: number;
  /** How documents are written; what becomes of each is reported to the observer, not here. */
  materialize: Omit<MaterializeOptions, "onDocument" | "onCommitted" | "onHealed">;
  logger: Logger;
  /** Hears everything the worker reports, for metrics and logs; none: nobody does. */
  observer?: BranchObserver;
  /** Called after every push that landed, with the new tip. */
  onPublished?: (commit: string, writes: DecidedWrite[]) => void;
  /** Called when a refresh proved where the branch is without a push of ours. */
  onProved?: (commit: string | undefined, by: "Fetch" | "Advertisement") => void;
  /** Called whenever the branch's backlog, intake or outage changes. */
  onState?: (state: BranchState) => void;
  /** What each folder's gates report, and the fresh snapshots they ask for (drops and placements: the observer). */
  folders: Omit<TargetFolderCallbacks, "onDropped" | "onPlaced">;
  /** How long the render gate holds live events: 10 minutes unless a test shortens it. */
  renderHoldMs?: number;
  /** Called whenever a CommitRequest's phase or outcome changes on this worker. */
  onSave?: (id: string, report: Report) => void;
  /** The appliers the branch's GitTargets name through their claims, and how an apply is carried out. */
  applies?: BranchApplies;
  /** The branch's durable write queue; none: writes live in memory only. */
  queue?: { log: WriteLog };
}

type Event =
  | { stop: true }
  | { recheck: TargetSettings; done?: () => void }
  /** A look at where the remote is, asked for (requestedAt); a push delivery's waits (refresh.ts). */
  | { refresh: "asked" | "delivery" }
  | { resumed: TargetSettings }
  | { save: SaveRequest; target: TargetSettings }
  | { withdraw: string; message: string; answer: (answer: WithdrawAnswer) => void }
  /** An apply attempt ended: the dispatcher's report, decided on the loop. */
  | { applied: AttemptReport };

type WindowWrite = Change & { target: TargetSettings; author?: Author; entry?: string };

export class BranchWorker {
  private readonly events = new WorkerQueue<Event>();
  private readonly window: CommitWindow<WindowWrite>;
  private readonly pending = new RetainedWrites();
  private lastPushAt = 0;
  private lastProvedAt = Date.now();
  /** A push notice was looked at while writes were retained: the remote is read once they are published. */
  private lookOwed = false;
  private readonly retry = new RetrySchedule();
  private running: Promise<void> | undefined;
  private readonly abort = new AbortController();
  private readonly folders: TargetFolders;
  private readonly suspensions: Suspensions;
  private readonly publication: Publication;
  private readonly intake = new IntakeGate();
  private unpublished: Unpublished | undefined;
  /** The CommitRequests this worker serves: where each is, or how it ended. */
  readonly saves: WorkerSaves;
  /** The loop has exited: a withdraw is answered at once. */
  private stopped = false;
  private readonly looks = new DeliveryLooks();
  /** What is due to be applied, when a GitTarget on the branch names an applier claim. */
  private readonly applies: WorkerApplies | undefined;
  /** When a flush may next prove where the remote is, after one that could not. */
  private proveNotBefore = 0;
  private readonly durable: DurableWrites | undefined;
  private queueState: BranchState["durableQueue"];
  private readonly observer: BranchObserver;
  /** The last push to the review ref, on a branch pushed for review: what the branch's status says. */
  private reviewPush: ReviewPush | undefined;

  constructor(private readonly options: BranchWorkerOptions) {
    const observer = options.observer ?? unobserved;
    this.observer = observer;
    this.window = new CommitWindow(options.bufferLimitBytes);
    this.suspensions = new Suspensions((key) => options.folders.onResyncRequested(key, undefined));
    // Nothing a review push carries is merged, so no applier has anything to apply: none is asked.
    const review = options.clone.reviewRef;
    if (options.applies && review !== undefined)
      options.logger.info("the branch is pushed to a review ref: no applier is asked to apply it", {
        ref: review,
      });
    const applies =
      options.applies && review === undefined
        ? new WorkerApplies(options.applies, options.logger, (report) =>
            this.events.push({ applied: report }),
          )
        : undefined;
    this.applies = applies;
    this.durable =
      options.queue &&
      new DurableWrites(options.queue.log, {
        ...options.queue,
        onAppend: (outcome) => observer.queue(outcome, 1),
        onReplayed: (entries) => observer.queue("replayed", entries),
        additionalSensitive: options.materialize.additionalSensitive,
        logger: options.logger,
        holdMs: options.renderHoldMs ?? 10 * 60_000,
        onState: (state) => {
          this.queueState = state;
          this.updateIntake();
        },
      });
    const dir = options.clone.dir;
    this.folders = new TargetFolders(
      { holdMs: options.renderHoldMs ?? 10 * 60_000, budgetBytes: options.bufferLimitBytes },
      {
        ...options.folders,
        onDropped: (key, reason, count) => observer.dropped(key, reason, count),
        // A new document in a folder an applier applies is adopted by an apply of the tip.
        onPlaced: (key, identity, source) => {
          observer.placed(key, identity, source);
          applies?.placed(key);
        },
      },
      dir === undefined ? undefined : new InventoryStore(dir),
    );
    const { onRefused, onEncrypted } = options.materialize;
    this.publication = new Publication({
      repository: options.clone,
      materialize: {
        ...options.materialize,
        onDocument: (write, outcome) => observer.document(write, outcome),
        onCommitted: (write, commit) => observer.committed(write, commit),
        onHealed: (write, identity, healed) => observer.healed(write, identity, healed),
        onEncrypted: (write, identity, outcome) => {
          observer.encrypted(write, identity, outcome);
          onEncrypted?.(write, identity, outcome);
        },
        onRefused: (write, identity, reason, message) => {
          observer.refused(write, identity, reason, message);
          onRefused(write, identity, reason, message);
          // A refusal names an edit, whether a watch event or a snapshot found it: the writer
          // refuses only a live object that differs from the document (an edit made while its
          // collection replayed reaches the worker inside the next snapshot).
          if (write.target.claim) applies?.refused(write.target.key, identity, reason);
        },
        onOverridden: (write, overridden, commit) =>
          applies?.overridden(write.target.key, overridden, commit),
      },
      folders: this.folders,
      logger: options.logger,
      attempts: options.pushAttempts,
      ...(options.mayPush ? { mayPush: options.mayPush } : {}),
      onFetched: (tip) => applies?.fetched(tip),
      onGit: (event) => observer.git(event),
    });
    this.saves = new WorkerSaves(
      {
        window: this.window,
        branch: options.clone.branch,
        folders: this.folders,
        decide: (closed) => this.decide(closed as ClosedWindow<WindowWrite> | undefined),
        retain: (write) => this.retain(write, 0),
        intakePaused: () => this.intake.paused,
      },
      (id, report) => options.onSave?.(id, report),
    );
  }

  /** A CommitRequest's attach, or its re-send: registered on the worker's FIFO. */
  attachSave(target: TargetSettings, request: SaveRequest): void {
    if (this.stopped) return;
    this.events.push({ save: request, target });
  }

  /** Withdraws a CommitRequest it does not hold, behind every queued attach; at once once stopped. */
  withdrawSave(id: string, message: string): Promise<WithdrawAnswer> {
    if (this.stopped) return Promise.resolve(this.saves.withdraw(id, message, Date.now()));
    return new Promise((answer) => this.events.push({ withdraw: id, message, answer }));
  }

  /** Writes decided and not yet pushed. */
  get backlog(): number {
    return this.pending.length;
  }

  /** Fetches the publication cycles have made: what the base-trust tests count. */
  get fetches(): number {
    return this.publication.fetches;
  }

  /** Whether a commit window is open: what a test of what a look does while one is needs. */
  get windowOpen(): boolean {
    return this.window.isOpen;
  }

  /** The branch's tip as the worker last knew it (a fetch, a push, a ref advertisement). */
  get branchTip(): string | undefined {
    return this.publication.branchTip;
  }

  /**
   * What a watch reads when a snapshot's collection of a target on this branch starts: the apply
   * epoch and whether Git is ahead. Undefined where no claim is known to the process.
   */
  collecting(): CollectedWhile | undefined {
    return this.applies?.collecting();
  }

  /**
   * Whether a snapshot of a target waits in the worker, queued or decided and not yet pushed:
   * until none does, "its initial snapshots are published" is not true, and no applier is asked.
   */
  holdsResync(targetKey: string): boolean {
    if (this.events.holdsSnapshot(targetKey)) return true;
    return this.pending.writes().some((w) => w.reason === "reconcile" && w.target.key === targetKey);
  }

  enqueue(target: TargetSettings, item: StreamItem): void {
    this.events.items([{ target, item, bytes: bytesOf(item) }], "back");
  }

  /**
   * Takes a stream's item as `enqueue` does, once the durable queue keeps it: the watch side
   * reads its next item only after this resolves. Redis away, the item goes on from memory. An
   * event the replay already took, delivered again by the resumed watch, is dropped.
   */
  async accept(target: TargetSettings, item: StreamItem): Promise<void> {
    if (this.durable?.redelivered(target.key, item)) {
      this.options.logger.debug(
        "an event the durable queue replayed, delivered again by the resumed watch: taken once",
        {
          target: target.key,
          object: "identity" in item ? identityKeyOf(item.identity) : undefined,
        },
      );
      return;
    }
    const appended = this.durable && !this.stopped ? await this.durable.append(target.key, item) : undefined;
    const entry = appended && "id" in appended ? { entry: appended.id } : {};
    this.events.items([{ target, item, bytes: bytesOf(item), ...entry }], "back");
  }

  /**
   * What the durable queue holds of a GitTarget from before this worker (a crash, a takeover,
   * a worker it replaced): queued, with their authors, ahead of anything queued since, which
   * is newer. Once per target.
   */
  async replay(target: TargetSettings): Promise<void> {
    if (!this.durable) return;
    const entries = await this.durable.replay(target.key, Date.now());
    const intakes = entries.map(({ id, item, replayed }) => ({
      target,
      item,
      bytes: bytesOf(item),
      entry: id,
      replayed,
    }));
    if (intakes.length > 0) this.events.items(intakes, "front");
  }

  /**
   * Resolves once the branch takes items again: at once, unless a retry is pending and the
   * budget is spent, in which case a landed push reopens it.
   */
  intakeOpen(): Promise<void> {
    return this.intake.open();
  }

  /** Reads a refused folder again, so a fix in Git clears it; with `done` (a requestedAt), any folder. */
  recheck(target: TargetSettings, done?: () => void): void {
    if (!done && !this.folders.isRefused(target)) return;
    this.events.push({ recheck: target, done });
  }

  /** A suspended target resumed: its items after this are written again. */
  resume(target: TargetSettings): void {
    this.events.push({ resumed: target });
  }

  /** Proves where the remote branch is now, as the periodic refresh does; a requestedAt asks this. */
  refresh(): void {
    this.events.push({ refresh: "asked" });
  }

  /** A push delivery named the branch: one look waits at most, so a burst never crowds writes out. */
  notice(): void {
    if (this.looks.noticed()) this.events.push({ refresh: "delivery" });
  }

  /**
   * An attempt's end, on the loop. One whose applier's source fetched another commit than the
   * one asked for is a hint that the remote moved: looked at as a push notice is
   * (applier-claims.md, "Learning about pushes"), or the worker would ask for the commit it knows
   * until the periodic refresh.
   */
  private reportApplied(report: AttemptReport): void {
    this.applies?.reported(report, Date.now());
    const { outcome } = report;
    if ((outcome.kind === "failed" || outcome.kind === "succeeded") && outcome.remoteMoved) {
      this.options.logger.debug("an applier's source fetched another commit: looking at the remote", {
        commit: report.attempt.commit,
      });
      this.notice();
    }
  }

  start(): void {
    // A takeover's backlog is read at once, so the first stream to attach waits the least for it.
    void this.durable?.load(Date.now());
    this.running ??= this.loop();
  }

  /** Closes the window, tries one publication of everything retained, and stops: what did not land. */
  async stop(): Promise<Unpublished | undefined> {
    this.events.push({ stop: true });
    await this.running;
    return this.unpublished;
  }

  private async loop(): Promise<void> {
    for (;;) {
      const event = this.events.shift();
      if (event && "stop" in event) {
        await this.shutdown();
        return;
      }
      if (event && "recheck" in event) {
        await this.readFolders([event.recheck]);
        event.done?.();
      } else if (event && "resumed" in event)
        this.events.items(this.suspensions.resumed(event.resumed), "front");
      else if (event && "refresh" in event && event.refresh === "delivery") this.looks.taken(Date.now());
      else if (event && "refresh" in event) await this.refreshNow();
      else if (event && "save" in event) this.saves.attach(event.target, event.save, Date.now());
      else if (event && "withdraw" in event)
        event.answer(this.saves.withdraw(event.withdraw, event.message, Date.now()));
      else if (event && "applied" in event) this.reportApplied(event.applied);
      else if (event) this.handle(event);
      for (const key of this.applies?.reanchor(Date.now()) ?? [])
        this.options.folders.onResyncRequested(key, undefined);
      this.folders.expire(Date.now());
      this.saves.expire(Date.now());
      this.decide(this.window.tick(Date.now()));
      this.updateIntake();
      if (this.events.length > 0) continue;
      if (await this.applyStep()) continue;
      if (this.pending.length > 0 && this.publishDueAt() <= Date.now()) {
        await this.publish();
        continue;
      }
      if (this.pending.length > 0 && (this.retry.probeDueAt ?? Infinity) <= Date.now()) {
        await this.probeOutage();
        continue;
      }
      // While the push waits out its cooldown, the retained writes are committed a slice at a
      // time, between the events, so the push finds them made.
      if (
        this.pending.length > 0 &&
        (await this.publication.commitAhead(
          this.retained(),
          (released) => this.events.items(released, "front"),
          100,
        ))
      )
        continue;
      const delivery = this.looks.start(Date.now());
      const due = this.lookOwed || Date.now() >= this.lastProvedAt + this.refreshInterval;
      if (delivery || (this.idle() && due)) {
        await this.refreshNow(delivery);
        continue;
      }
      // Going idle: what was dropped on purpose since the last push leaves the durable queue.
      this.durable?.settle(this.heldEntries(), Date.now(), false);
      await this.sleepUntilWork();
    }
  }

  private handle(intake: Intake): void {
    const { target, item } = intake;
    const bytes = intake.bytes ?? bytesOf(item);
    this.saves.saw(target);
    if (this.suspensions.take(intake)) return;
    // The apply window: an applier's echo, or its late write over a newer edit, is not mirrored.
    // Only a folder a claim applies is judged, so every other live event costs nothing here.
    const applies = target.claim && this.applies;
    if (applies && item.type === "upsert" && !applies.admits(target.key, item.identity, item, Date.now()))
      return;
    if (applies && item.type === "delete") applies.deleted(target.key, item.identity, Date.now());
    // A snapshot collected while Git was ahead would revert the unapplied commit: discarded,
    // and a fresh one asked for once the apply is done. Its collection stays replaying, so the
    // render gate holds its live writes until the fresh one lands.
    const verdict =
      applies && item.type === "snapshot"
        ? applies.snapshot(target.key, item.collection.key, item.collected, Date.now())
        : undefined;
    if (verdict === "discard") {
      this.options.logger.info(
        "snapshot discarded: Git is ahead of the cluster; a fresh one follows the apply",
        {
          target: target.key,
          collection: item.collection.key,
        },
      );
      return;
    }
    const { pass, released } = this.folders.admit(intake, bytes, Date.now());
    this.events.items(released, "front");
    if (!pass || item.type === "replaying" || item.type === "removed") return;
    // A window is one author's: a change by someone else closes it, so no commit mixes authors.
    const author = item.type === "upsert" || item.type === "delete" ? item.author : undefined;
    const { name, email } = author ?? this.options.committer;
    const actor = author?.kind === "none" ? undefined : author?.username;
    const owner = { author: `${name} <${email}>`, target: target.key, actor };
    if (item.type === "snapshot") {
      // A resync closes the open window first, so the snapshot lands after what came before it.
      this.decide(this.window.close("resync"));
      this.options.logger.debug("resync accepted", { target: target.key, bytes });
      // A first snapshot with an applier keeps what was pushed since the commit last applied,
      // where nobody edited it live (the three-way rule, folder/threeway.ts).
      const base = verdict === "initial" ? applies?.baseOf(target.key) : undefined;
      this.retain(resyncWrite(target, item, base ? { base } : undefined), bytes);
      return;
    }
    const change = liveChange(item);
    const object = identityKeyOf(change.identity);
    this.options.logger.debug("write accepted", {
      target: target.key,
      type: item.type,
      object,
      author: owner.author,
    });
    const before = this.window.owner;
    const opens = before?.author !== owner.author || before.target !== owner.target;
    for (const closed of this.window.add(
      owner,
      target.timers,
      object,
      {
        ...change,
        target,
        ...(author ? { author } : {}),
        ...(intake.entry ? { entry: intake.entry } : {}),
        ...(intake.replayed ? { replayed: intake.replayed } : {}),
      },
      bytes,
      Date.now(),
    )) {
      this.decide(closed);
    }
    // A waiting request attaches before the target's own timers are consulted.
    if (opens) this.saves.windowOpened(Date.now());
  }

  /**
   * Flush, then apply (applier-claims.md): an apply due closes the window and takes the mark,
   * the writes up to it are published without the cooldown, and the attempts are sent for the
   * tip that publication produced. A CommitRequest's open window, or an outage, holds the send.
   * Whether it did something, so the loop looks again.
   */
  private async applyStep(): Promise<boolean> {
    const applies = this.applies;
    if (!applies) return false;
    const now = Date.now();
    const held = this.window.request !== undefined || this.retry.current !== undefined;
    const step = applies.next(now, {
      tip: this.publication.branchTip,
      trusted: this.publication.trusted,
      pending: this.pending.length,
      held,
    });
    if (!step) return false;
    if (step.kind === "flush") {
      this.decide(this.window.close("apply_due"));
      return true;
    }
    if (step.kind === "publish") {
      if (Math.max(this.retry.dueAt, this.publication.contendedUntil) > now) return false;
      await this.publish();
      return true;
    }
    if (step.kind === "prove") {
      // A remote that cannot be proved is asked again in 5 s, not on every wake.
      if (now < this.proveNotBefore) return false;
      this.proveNotBefore = now + 5_000;
      await proveBranch(this.refreshing());
      return true;
    }
    applies.send(step.tip, now, (commit) => this.publication.branchTip === commit);
    return true;
  }

  private decide(closed: ClosedWindow<WindowWrite> | undefined): void {
    if (closed) {
      this.observer.windowClosed(closed.reason);
      this.options.logger.debug("commit window closed", {
        target: closed.owner.target,
        author: closed.owner.author,
        reason: closed.reason,
        writes: closed.writes.length,
        bytes: closed.bytes,
      });
    }
    if (!closed || closed.writes.length === 0) return;
    const { target, author } = closed.writes[0]!;
    const changes = closed.writes.map(({ target: _t, author: _a, entry: _e, ...change }) => change);
    const save = this.saves.closed(closed, target, Date.now());
    const entry = oldestId(closed.writes.map((w) => w.entry));
    // The window weighed each write as it came in: no second serialization on the worker's loop.
    this.retain(
      {
        target,
        reason: "live",
        changes,
        ...(author ? { author } : {}),
        ...(save ? { save } : {}),
        ...(entry ? { entry } : {}),
      },
      closed.bytes,
    );
  }

  /** The durable queue entries of everything the worker still holds, wherever it is. */
  private *heldEntries(): Generator<string | undefined> {
    yield* this.events.entries();
    yield* this.folders.heldEntries();
    yield* this.suspensions.entries();
    for (const write of this.window.writes()) yield write.entry;
    for (const write of this.pending.writes()) yield write.entry;
  }

  /** The retained writes, oldest first. */
  private retained(): DecidedWrite[] {
    return this.pending.writes();
  }

  private retain(write: DecidedWrite, bytes: number): void {
    this.pending.add(write, bytes, itemChargeBytes);
  }

  /** When the next publication may start: after the push cooldown, and after a failure's backoff. */
  private publishDueAt(): number {
    const cooldownEnd = this.lastPushAt + (this.options.pushCooldownMs ?? defaultPushCooldownMs);
    return Math.max(cooldownEnd, this.retry.dueAt, this.publication.contendedUntil);
  }

  private get refreshInterval(): number {
    return this.options.refreshIntervalMs ?? 10 * 60_000;
  }

  private idle(): boolean {
    return this.pending.length === 0 && !this.window.isOpen;
  }

  /** One ref advertisement during an outage: an answer makes the next publication due at once. */
  private async probeOutage(): Promise<void> {
    const answered = await this.options.clone.advertise().then(
      () => true,
      () => false,
    );
    this.retry.probed(Date.now(), answered);
    if (answered) this.options.logger.info("the remote answers again; publishing the kept writes now");
  }

  /** Publishes every retained write; a failure keeps them all and waits out the retry schedule. */
  private async publish(): Promise<void> {
    const writes = this.retained();
    const outcome = await this.publication.cycle(writes, (released) => this.events.items(released, "front"));
    if (outcome.kind === "contended") return;
    if (outcome.kind === "failed") {
      const outage = this.retry.failed(outcome.error, Date.now(), outcome);
      this.saves.waiting(writes, outcome.error);
      this.options.logger.error("publication failed; the writes are kept", {
        error: outcome.error,
        fault: outcome.fault ?? "remote",
        retryAt: new Date(outage.nextAttemptAt).toISOString(),
        retained: writes.length,
      });
      return;
    }
    this.pending.published(outcome.published);
    this.applies?.published(outcome.published);
    this.saves.published(writes.slice(0, outcome.published), Date.now());
    for (const target of new Set(writes.slice(0, outcome.published).map((w) => w.target)))
      this.folders.published(target);
    this.durable?.settle(this.heldEntries(), Date.now(), true);
    this.retry.succeeded();
    this.lastProvedAt = Date.now();
    if (outcome.kind === "pushed") {
      // The cooldown follows a push only: a publication whose writes changed nothing (a restart's
      // resync of a folder Git already holds) sent nothing to cool down from, and had held the
      // next write's push for 5 s.
      this.lastPushAt = Date.now();
      const review = this.options.clone.reviewRef;
      if (review !== undefined) this.reviewPush = { ref: review, commit: outcome.commit, at: new Date() };
      this.applies?.pushed(outcome.commit);
      this.options.onPublished?.(outcome.commit, writes.slice(0, outcome.published));
    }
  }

  /**
   * Proves where the remote is without a write (refresh.ts), while the branch is idle. A
   * delivery closes the open window first, unless a CommitRequest holds it, so the window's
   * publication finds the move.
   */
  private async refreshNow(delivery = false): Promise<void> {
    this.lastProvedAt = Date.now();
    if (delivery && this.window.request === undefined) this.decide(this.window.close("delivery"));
    // With writes retained, the look is owed until they are published: their push finds a move
    // (a rejected push fetches first), but writes that turn out to change nothing push nothing,
    // and a notice must never be lost to them.
    const idle = this.idle();
    if (delivery)
      this.options.logger.debug("a push notice's look", {
        fetches: idle,
        retained: this.pending.length,
        windowOpen: this.window.isOpen,
      });
    if (!idle) {
      this.lookOwed ||= delivery;
      return;
    }
    this.lookOwed = false;
    await proveBranch(this.refreshing());
  }

  /** Reads folders again, when no write is waiting to do that anyway. */
  private async readFolders(targets: TargetSettings[]): Promise<void> {
    if (this.pending.length === 0) await readFolders(this.refreshing(), targets);
  }

  private refreshing(): Refreshing {
    const { clone, materialize, logger, onProved } = this.options;
    return { publication: this.publication, folders: this.folders, clone, materialize, logger, onProved };
  }

  /** The intake budget (intakebudget.ts), weighed over everything accepted and not published. */
  private updateIntake(): void {
    const retained = this.pending.bytes + this.events.bytes + this.window.bytes + this.saves.bytes();
    const waiting = (this.retry.current ?? this.publication.contended) !== undefined;
    this.intake.update(waiting, retained, this.options.bufferLimitBytes);
    const changed = this.intake.changed({
      retainedWrites: this.pending.length,
      retainedBytes: retained,
      outage: this.retry.current,
      contention: this.publication.contended,
      ...(this.queueState ? { durableQueue: this.queueState } : {}),
      ...(this.reviewPush ? { reviewPush: this.reviewPush } : {}),
    });
    if (changed) this.options.onState?.(changed);
  }

  /** Shutdown: the open window is finalized, and everything retained gets one publication. */
  private async shutdown(): Promise<void> {
    this.decide(this.window.close("shutdown"));
    if (this.pending.length > 0) {
      const retained = this.retained();
      this.unpublished = await this.publication.last(retained, this.options.shutdownGraceMs ?? 20_000);
      if (!this.unpublished) {
        this.saves.published(retained, Date.now());
        this.pending.published(retained.length);
      }
    }
    // What was not published stays in the durable queue for whoever holds the branch next.
    this.durable?.settle(this.heldEntries(), Date.now(), true);
    await this.durable?.flushed();
    this.saves.stopped(Date.now());
    this.stopped = true;
    const failed = (what: string) => (err: unknown) =>
      this.options.logger.error(`${what} failed`, { error: errorText(err) });
    // Kept so a restart reads only what changed since; without it, a restart reads every folder.
    await this.folders.saveInventories().catch(failed("saving the folders' inventories"));
    await this.options.clone.close().catch(failed("closing the clone"));
    this.abort.abort();
    this.intake.release();
  }

  private async sleepUntilWork(): Promise<void> {
    await this.events.sleep(
      [
        this.window.dueAt(),
        this.pending.length > 0 ? this.publishDueAt() : undefined,
        this.pending.length > 0 ? this.retry.probeDueAt : undefined,
        this.folders.dueAt(),
        this.saves.dueAt(),
        this.applies?.dueAt(Date.now()),
        this.applies?.flushing ? this.proveNotBefore : undefined,
        this.looks.due,
        this.durable?.settleDueAt(),
        this.idle() ? this.lastProvedAt + this.refreshInterval : undefined,
      ],
      this.abort.signal,
    );
  }
}
