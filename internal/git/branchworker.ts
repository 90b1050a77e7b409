// One BranchWorker per repository branch. Every GitTarget on the branch feeds its single FIFO
// loop, so writes to the branch are serialized: live changes collect in the commit window,
// snapshots become resync writes, and decided writes are retained until a push lands, committed
// and pushed one commit each, with a push cooldown that batches bursts. A remote that cannot be
// reached keeps every retained write and is retried on its own schedule; while it is, intake is
// bounded by the branch budget.
import type { Logger } from "../operator/informer.ts";
import { sleep } from "../timing/sleep.ts";
import type { Author, StreamItem } from "../watch/stream.ts";
import type { Repository, Signature } from "./clone.ts";
import { renderRefusal } from "../kustomize/verdict.ts";
import { identityKeyOf } from "../manifest/writer.ts";
import type { MaterializeOptions, WorkTree } from "./materialize.ts";
import { Publication, type Contention, type Unpublished } from "./publication.ts";
import { RetrySchedule, type Outage } from "./retry.ts";
import { Suspensions } from "./suspension.ts";
import { TargetFolders, type Intake, type TargetFolderCallbacks } from "./targetfolders.ts";
import { IntakeGate, bytesOf, itemChargeBytes } from "./intakebudget.ts";
import { InventoryStore } from "./inventorystore.ts";
import { CommitWindow, type ClosedWindow } from "./window.ts";
import { liveChange, resyncWrite, type Change, type DecidedWrite, type TargetSettings } from "./writes.ts";

export interface BranchWorkerOptions {
  clone: Repository & WorkTree;
  committer: Signature;
  /** --branch-buffer-max-size: what the branch may hold accepted and unpublished. */
  bufferLimitBytes: number;
  pushCooldownMs?: number;
  /** Attempts of one publication when the remote keeps moving. */
  pushAttempts?: number;
  /** How long an idle branch waits before it proves where its remote is again: 10 minutes. */
  refreshIntervalMs?: number;
  /** How long shutdown's one publication may take, inside the pod's termination grace: 20 s. */
  shutdownGraceMs?: number;
  materialize: MaterializeOptions;
  logger: Logger;
  /** Called after every push that landed, with the new tip. */
  onPublished?: (commit: string, writes: DecidedWrite[]) => void;
  /** Called when a refresh proved where the branch is without a push of ours. */
  onProved?: (commit: string | undefined, by: "Fetch" | "Advertisement") => void;
  /** Called whenever the branch's backlog, intake or outage changes. */
  onState?: (state: BranchState) => void;
  /** What each folder's gates and placement report, and what they drop. */
  folders: TargetFolderCallbacks;
  /** How long the render gate holds live events: 10 minutes unless a test shortens it. */
  renderHoldMs?: number;
}

/** What every GitTarget on the branch reports of its worker, and what the metrics show. */
export interface BranchState {
  retainedWrites: number;
  retainedBytes: number;
  intakePaused: boolean;
  outage?: Outage;
  contention?: Contention;
}

type Event =
  | Intake
  | { stop: true }
  | { recheck: TargetSettings; done?: () => void }
  | { refresh: true }
  | { resumed: TargetSettings };

export class BranchWorker {
  private readonly events: Event[] = [];
  /** What the queued items weigh, each with its charge: kept as they come and go, for the budget. */
  private queuedBytes = 0;
  private readonly window: CommitWindow<Change & { target: TargetSettings; author?: Author }>;
  private readonly pending: { write: DecidedWrite; bytes: number }[] = [];
  private wake: () => void = () => undefined;
  private lastPushAt = 0;
  private lastProvedAt = Date.now();
  private readonly retry = new RetrySchedule();
  private running: Promise<void> | undefined;
  private readonly abort = new AbortController();
  private readonly folders: TargetFolders;
  private readonly suspensions: Suspensions;
  private readonly publication: Publication;
  private readonly intake = new IntakeGate();
  private lastState = "";
  private unpublished: Unpublished | undefined;

  constructor(private readonly options: BranchWorkerOptions) {
    this.window = new CommitWindow(options.bufferLimitBytes);
    this.suspensions = new Suspensions((key) => options.folders.onResyncRequested(key, undefined));
    const dir = options.clone.dir;
    this.folders = new TargetFolders(
      { holdMs: options.renderHoldMs ?? 10 * 60_000, budgetBytes: options.bufferLimitBytes },
      options.folders,
      dir === undefined ? undefined : new InventoryStore(dir),
    );
    this.publication = new Publication({
      repository: options.clone,
      materialize: options.materialize,
      folders: this.folders,
      logger: options.logger,
      attempts: options.pushAttempts,
    });
  }

  /** Writes decided and not yet pushed. */
  get backlog(): number {
    return this.pending.length;
  }

  /** Fetches the publication cycles have made: what the base-trust tests count. */
  get fetches(): number {
    return this.publication.fetches;
  }

  enqueue(target: TargetSettings, item: StreamItem): void {
    this.queue([{ target, item, bytes: bytesOf(item) }], "back");
    this.wake();
  }

  /** Queues items at the back, or (released by the render gate) at the front, counting their weight. */
  private queue(items: Intake[], end: "front" | "back"): void {
    for (const item of items) this.queuedBytes += (item.bytes ?? 0) + itemChargeBytes;
    if (end === "front") this.events.unshift(...items);
    else this.events.push(...items);
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
    this.wake();
  }

  /** A suspended target resumed: its items after this are written again. */
  resume(target: TargetSettings): void {
    this.events.push({ resumed: target });
    this.wake();
  }

  /** Proves where the remote branch is now, as the periodic refresh does; a requestedAt asks this. */
  refresh(): void {
    this.events.push({ refresh: true });
    this.wake();
  }

  start(): void {
    this.running ??= this.loop();
  }

  /** Closes the window, tries one publication of everything retained, and stops: what did not land. */
  async stop(): Promise<Unpublished | undefined> {
    this.events.push({ stop: true });
    this.wake();
    await this.running;
    return this.unpublished;
  }

  private async loop(): Promise<void> {
    for (;;) {
      const event = this.events.shift();
      if (event && "item" in event) this.queuedBytes -= (event.bytes ?? 0) + itemChargeBytes;
      if (event && "stop" in event) {
        await this.shutdown();
        return;
      }
      if (event && "recheck" in event) {
        await this.readFolders([event.recheck]);
        event.done?.();
      } else if (event && "resumed" in event) this.queue(this.suspensions.resumed(event.resumed), "front");
      else if (event && "refresh" in event) await this.refreshNow();
      else if (event) this.handle(event);
      this.folders.expire(Date.now());
      this.decide(this.window.tick(Date.now()));
      this.updateIntake();
      if (this.events.length > 0) continue;
      if (this.pending.length > 0 && this.publishDueAt() <= Date.now()) {
        await this.publish();
        continue;
      }
      // While the push waits out its cooldown, the retained writes are committed a slice at a
      // time, between the events, so the push finds them made.
      if (
        this.pending.length > 0 &&
        (await this.publication.commitAhead(
          this.retained(),
          (released) => this.queue(released, "front"),
          100,
        ))
      )
        continue;
      if (this.idle() && Date.now() >= this.lastProvedAt + this.refreshInterval) {
        await this.refreshNow();
        continue;
      }
      await this.sleepUntilWork();
    }
  }

  private handle(intake: Intake): void {
    const { target, item } = intake;
    const bytes = intake.bytes ?? bytesOf(item);
    if (this.suspensions.take(intake)) return;
    const { pass, released } = this.folders.admit(intake, bytes, Date.now());
    this.queue(released, "front");
    if (!pass || item.type === "replaying" || item.type === "removed") return;
    // A window is one author's: a change by someone else closes it, so no commit mixes authors.
    const author = item.type === "upsert" || item.type === "delete" ? item.author : undefined;
    const { name, email } = author ?? this.options.committer;
    const owner = { author: `${name} <${email}>`, target: target.key };
    if (item.type === "snapshot") {
      // A resync closes the open window first, so the snapshot lands after what came before it.
      this.decide(this.window.close("resync"));
      this.retain(resyncWrite(target, item), bytes);
      return;
    }
    const change = liveChange(item);
    for (const closed of this.window.add(
      owner,
      target.timers,
      identityKeyOf(change.identity),
      { ...change, target, ...(author ? { author } : {}) },
      bytes,
      Date.now(),
    )) {
      this.decide(closed);
    }
  }

  private decide(
    closed: ClosedWindow<Change & { target: TargetSettings; author?: Author }> | undefined,
  ): void {
    if (!closed || closed.writes.length === 0) return;
    const { target, author } = closed.writes[0]!;
    const changes = closed.writes.map(({ target: _t, author: _a, ...change }) => change);
    // The window weighed each write as it came in: no second serialization on the worker's loop.
    this.retain({ target, reason: "live", changes, ...(author ? { author } : {}) }, closed.bytes);
  }

  /** The retained writes, oldest first. */
  private retained(): DecidedWrite[] {
    return this.pending.map((p) => p.write);
  }

  private retain(write: DecidedWrite, bytes: number): void {
    this.pending.push({ write, bytes: bytes + itemChargeBytes * Math.max(1, write.changes.length) });
  }

  /** When the next publication may start: after the push cooldown, and after a failure's backoff. */
  private publishDueAt(): number {
    const cooldownEnd = this.lastPushAt + (this.options.pushCooldownMs ?? 5_000);
    return Math.max(cooldownEnd, this.retry.dueAt, this.publication.contendedUntil);
  }

  private get refreshInterval(): number {
    return this.options.refreshIntervalMs ?? 10 * 60_000;
  }

  private idle(): boolean {
    return this.pending.length === 0 && !this.window.isOpen;
  }

  /** Publishes every retained write; a failure keeps them all and waits out the retry schedule. */
  private async publish(): Promise<void> {
    const writes = this.retained();
    const outcome = await this.publication.cycle(writes, (released) => this.queue(released, "front"));
    if (outcome.kind === "contended") return;
    if (outcome.kind === "failed") {
      const outage = this.retry.failed(outcome.error, Date.now(), outcome);
      this.options.logger.error("publication failed; the writes are kept", {
        error: outcome.error,
        fault: outcome.fault ?? "remote",
        retryAt: new Date(outage.nextAttemptAt).toISOString(),
        retained: writes.length,
      });
      return;
    }
    this.pending.splice(0, outcome.published);
    for (const target of new Set(writes.slice(0, outcome.published).map((w) => w.target)))
      this.folders.published(target);
    this.retry.succeeded();
    this.lastPushAt = Date.now();
    this.lastProvedAt = Date.now();
    if (outcome.kind === "pushed")
      this.options.onPublished?.(outcome.commit, writes.slice(0, outcome.published));
  }

  /**
   * Proves where the remote is without a write: one advertisement, and a fetch only when it moved.
   * A moved branch is read again, so a folder somebody broke (or fixed) is reported.
   */
  private async refreshNow(): Promise<void> {
    this.lastProvedAt = Date.now();
    if (!this.idle()) return;
    try {
      const by = await this.publication.refresh();
      this.options.onProved?.(this.publication.tip, by);
      if (by === "Fetch") await this.readFolders(this.folders.targets(), false);
    } catch (err) {
      this.options.logger.error("proving where the remote branch is failed", {
        error: err instanceof Error ? err.message : String(err),
      });
    }
  }

  /**
   * Reads folders again and reports their verdicts, when no write is waiting to do that anyway;
   * `fetch` first when somebody may have pushed a fix.
   */
  private async readFolders(targets: TargetSettings[], fetch = true): Promise<void> {
    if (this.pending.length > 0) return;
    const { clone } = this.options;
    try {
      if (fetch) {
        this.publication.distrust();
        await this.publication.refresh();
      }
      for (const target of targets) {
        const inventory = this.folders.inventory(target);
        await inventory.refresh(clone);
        const refusal = this.folders.verdict(target) ?? (await renderRefusal(this.options, inventory));
        this.folders.checked(target, refusal);
      }
    } catch (err) {
      this.options.logger.error("reading the folders again failed", {
        error: err instanceof Error ? err.message : String(err),
      });
    }
  }

  /** The intake budget (intakebudget.ts), weighed over everything accepted and not published. */
  private updateIntake(): void {
    const retained = this.pending.reduce((sum, p) => sum + p.bytes, 0) + this.queuedBytes + this.window.bytes;
    const waiting = (this.retry.current ?? this.publication.contended) !== undefined;
    this.intake.update(waiting, retained, this.options.bufferLimitBytes);
    const state: BranchState = {
      retainedWrites: this.pending.length,
      retainedBytes: retained,
      intakePaused: this.intake.paused,
      outage: this.retry.current,
      contention: this.publication.contended,
    };
    // Bytes move with every item; the targets' status follows what a person acts on.
    const key = JSON.stringify({ ...state, retainedBytes: undefined });
    if (key !== this.lastState) {
      this.lastState = key;
      this.options.onState?.(state);
    }
  }

  /** Shutdown: the open window is finalized, and everything retained gets one publication. */
  private async shutdown(): Promise<void> {
    this.decide(this.window.close("shutdown"));
    if (this.pending.length > 0) {
      this.unpublished = await this.publication.last(this.retained(), this.options.shutdownGraceMs ?? 20_000);
    }
    // Kept so a restart reads only what changed since; without it, a restart reads every folder.
    await this.folders
      .saveInventories()
      .catch((err: unknown) =>
        this.options.logger.error("saving the folders' inventories failed", { error: String(err) }),
      );
    await this.options.clone
      .close()
      .catch((err: unknown) => this.options.logger.error("closing the clone failed", { error: String(err) }));
    this.abort.abort();
    this.intake.release();
  }

  private async sleepUntilWork(): Promise<void> {
    const deadlines = [
      this.window.dueAt(),
      this.pending.length > 0 ? this.publishDueAt() : undefined,
      this.folders.dueAt(),
      this.idle() ? this.lastProvedAt + this.refreshInterval : undefined,
    ].filter((d): d is number => d !== undefined);
    const wait = deadlines.length > 0 ? Math.max(0, Math.min(...deadlines) - Date.now()) : 60_000;
    // An event queued while the loop was awaiting something else has nobody to wake it.
    if (this.events.length > 0) return;
    const woken = new Promise<void>((resolve) => (this.wake = resolve));
    await Promise.race([woken, sleep(wait, this.abort.signal)]);
    this.wake = () => undefined;
  }
}
