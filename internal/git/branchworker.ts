// One BranchWorker per repository branch. Every GitTarget on the branch feeds its single FIFO
// loop, so writes to the branch are serialized: live changes collect in the commit window,
// snapshots become resync writes, and decided writes are committed and pushed, one commit each,
// with a push cooldown that batches bursts. A decided write stays until a push lands.
import type { Logger } from "../operator/informer.ts";
import { sleep } from "../timing/sleep.ts";
import type { StreamItem } from "../watch/stream.ts";
import { RemoteMovedError, type Clone, type Signature } from "./clone.ts";
import { materialize, type MaterializeOptions } from "./materialize.ts";
import { TargetFolders, type Intake, type TargetFolderCallbacks } from "./targetfolders.ts";
import { CommitWindow, type ClosedWindow } from "./window.ts";
import type { Change, DecidedWrite, TargetSettings } from "./writes.ts";

export interface BranchWorkerOptions {
  clone: Clone;
  committer: Signature;
  bufferLimitBytes: number;
  pushCooldownMs?: number;
  /** Attempts of one publication when the remote keeps moving. */
  pushAttempts?: number;
  materialize: MaterializeOptions;
  logger: Logger;
  /** Called after every push that landed, with the new tip. */
  onPublished?: (commit: string, writes: DecidedWrite[]) => void;
  /** What each folder's gates and placement report, and what they drop. */
  folders: TargetFolderCallbacks;
  /** How long the render gate holds live events: 10 minutes unless a test shortens it. */
  renderHoldMs?: number;
}

type Event = Intake | { stop: true } | { recheck: TargetSettings };

const retry = { baseMs: 10_000, maxMs: 5 * 60_000 };

const identityKeyOf = (c: Change) =>
  `${c.identity.group}/${c.identity.resource}/${c.identity.namespace}/${c.identity.name}`;

export class BranchWorker {
  private readonly events: Event[] = [];
  private readonly window: CommitWindow<Change & { target: TargetSettings }>;
  private readonly pending: DecidedWrite[] = [];
  private wake: () => void = () => undefined;
  private lastPushAt = 0;
  private retryAt = 0;
  private retryDelay = retry.baseMs;
  private running: Promise<void> | undefined;
  private readonly abort = new AbortController();
  private readonly folders: TargetFolders;

  constructor(private readonly options: BranchWorkerOptions) {
    this.window = new CommitWindow(options.bufferLimitBytes);
    this.folders = new TargetFolders(
      { holdMs: options.renderHoldMs ?? 10 * 60_000, budgetBytes: options.bufferLimitBytes },
      options.folders,
    );
  }

  /** Writes decided and not yet pushed. */
  get backlog(): number {
    return this.pending.length;
  }

  enqueue(target: TargetSettings, item: StreamItem): void {
    this.events.push({ target, item });
    this.wake();
  }

  /** Reads a refused folder again, so a fix in Git clears the refusal without a write. */
  recheck(target: TargetSettings): void {
    if (!this.folders.isRefused(target)) return;
    this.events.push({ recheck: target });
    this.wake();
  }

  start(): void {
    this.running ??= this.loop();
  }

  /** Closes the window, publishes what is decided (one attempt), and stops. */
  async stop(): Promise<void> {
    this.events.push({ stop: true });
    this.wake();
    await this.running;
  }

  private async loop(): Promise<void> {
    for (;;) {
      const event = this.events.shift();
      if (event && "stop" in event) {
        this.decide(this.window.close("shutdown"));
        if (this.pending.length > 0) await this.publish();
        this.abort.abort();
        return;
      }
      if (event && "recheck" in event) await this.readFolder(event.recheck);
      else if (event) this.handle(event);
      this.folders.expire(Date.now());
      this.decide(this.window.tick(Date.now()));
      if (this.events.length > 0) continue;
      if (this.pending.length > 0 && this.publishDueAt() <= Date.now()) {
        await this.publish();
        continue;
      }
      await this.sleepUntilWork();
    }
  }

  private handle(intake: Intake): void {
    const { target, item } = intake;
    const bytes = item.type === "upsert" ? JSON.stringify(item.object).length : 0;
    const { pass, released } = this.folders.admit(intake, bytes, Date.now());
    this.events.unshift(...released);
    if (!pass || item.type === "replaying" || item.type === "removed") return;
    const owner = {
      author: `${this.options.committer.name} <${this.options.committer.email}>`,
      target: target.key,
    };
    if (item.type === "snapshot") {
      // A resync closes the open window first, so the snapshot lands after what came before it.
      this.decide(this.window.close("resync"));
      this.pending.push({
        target,
        reason: "reconcile",
        changes: item.objects.map((o) => ({ op: "upsert", identity: o.identity, object: o.object })),
        sweep: {
          collection: item.collection,
          present: new Set(item.objects.map((o) => `${o.identity.namespace}/${o.identity.name}`)),
        },
      });
      return;
    }
    const change: Change =
      item.type === "upsert"
        ? { op: "upsert", identity: item.identity, object: item.object }
        : { op: "delete", identity: item.identity };
    for (const closed of this.window.add(
      owner,
      target.timers,
      identityKeyOf(change),
      { ...change, target },
      bytes,
      Date.now(),
    )) {
      this.decide(closed);
    }
  }

  private decide(closed: ClosedWindow<Change & { target: TargetSettings }> | undefined): void {
    if (!closed || closed.writes.length === 0) return;
    const target = closed.writes[0]!.target;
    this.pending.push({
      target,
      reason: "live",
      changes: closed.writes.map(({ target: _t, ...change }) => change),
    });
  }

  /** When the next publication may start: after the push cooldown, and after a failure's backoff. */
  private publishDueAt(): number {
    return Math.max(this.lastPushAt + (this.options.pushCooldownMs ?? 5_000), this.retryAt);
  }

  /**
   * Commits every decided write onto the remote tip and pushes, without force. A remote that
   * moved is fetched again and the writes are made again on its new tip; any other failure keeps
   * every write and retries on its own schedule, 10 s doubling to 5 min.
   */
  private async publish(): Promise<void> {
    const { clone, logger } = this.options;
    const writes = [...this.pending];
    for (let attempt = 1; attempt <= (this.options.pushAttempts ?? 5); attempt++) {
      try {
        await clone.sync();
        const committed = await this.commitAll(writes);
        const tip = committed > 0 ? await clone.push() : clone.baseCommit;
        this.pending.splice(0, writes.length);
        this.lastPushAt = Date.now();
        this.retryDelay = retry.baseMs;
        this.retryAt = 0;
        if (committed > 0 && tip) this.options.onPublished?.(tip, writes);
        return;
      } catch (err) {
        if (err instanceof RemoteMovedError) {
          logger.info("the remote moved; making the writes again on its new tip", { attempt });
          continue;
        }
        logger.error("publication failed; the writes are kept", {
          error: err instanceof Error ? err.message : String(err),
          retryInMs: this.retryDelay,
        });
        this.retryAt = Date.now() + this.retryDelay;
        this.retryDelay = Math.min(this.retryDelay * 2, retry.maxMs);
        return;
      }
    }
    this.retryAt = Date.now() + this.retryDelay;
  }

  /**
   * Makes each write in the clone, one commit each. What the render gate released on the way is
   * queued ahead of every later event, even when a later write fails.
   */
  private async commitAll(writes: DecidedWrite[]): Promise<number> {
    const released: Intake[] = [];
    let committed = 0;
    try {
      for (const write of writes) {
        const inventory = this.folders.inventory(write.target);
        const result = await materialize(
          this.options.clone,
          inventory,
          write,
          this.options.materialize,
        ).catch((err: unknown) => {
          // What a failed write left in the worktree is not what the inventory says.
          inventory.invalidate();
          throw err;
        });
        if (result.commit) committed++;
        released.push(...this.folders.written(write, result));
      }
    } finally {
      this.events.unshift(...released);
    }
    return committed;
  }

  /** Fetches and reads a folder's verdict, when no write is waiting to do that anyway. */
  private async readFolder(target: TargetSettings): Promise<void> {
    if (this.pending.length > 0) return;
    const { clone } = this.options;
    const inventory = this.folders.inventory(target);
    try {
      await clone.sync();
      await inventory.refresh(clone);
      this.folders.checked(target, inventory.accept());
    } catch (err) {
      this.options.logger.error("reading the folder again failed", {
        gitTarget: target.key,
        error: err instanceof Error ? err.message : String(err),
      });
    }
  }

  private async sleepUntilWork(): Promise<void> {
    const deadlines = [
      this.window.dueAt(),
      this.pending.length > 0 ? this.publishDueAt() : undefined,
      this.folders.dueAt(),
    ].filter((d): d is number => d !== undefined);
    const wait = deadlines.length > 0 ? Math.max(0, Math.min(...deadlines) - Date.now()) : 60_000;
    const woken = new Promise<void>((resolve) => (this.wake = resolve));
    await Promise.race([woken, sleep(wait, this.abort.signal)]);
    this.wake = () => undefined;
  }
}
