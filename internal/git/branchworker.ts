// One BranchWorker per repository branch. Every GitTarget on the branch feeds its single FIFO
// loop, so writes to the branch are serialized: live changes collect in the commit window,
// snapshots become resync writes, and decided writes are committed and pushed, one commit each,
// with a push cooldown that batches bursts. A decided write stays until a push lands.
import type { Logger } from "../operator/informer.ts";
import { sleep } from "../timing/sleep.ts";
import type { StreamItem } from "../watch/stream.ts";
import { RemoteMovedError, type Clone, type Signature } from "./clone.ts";
import { materialize, type MaterializeOptions } from "./materialize.ts";
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
}

type Event = { target: TargetSettings; item: StreamItem } | { stop: true };

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

  constructor(private readonly options: BranchWorkerOptions) {
    this.window = new CommitWindow(options.bufferLimitBytes);
  }

  /** Writes decided and not yet pushed. */
  get backlog(): number {
    return this.pending.length;
  }

  enqueue(target: TargetSettings, item: StreamItem): void {
    this.events.push({ target, item });
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
      if (event) this.handle(event.target, event.item);
      this.decide(this.window.tick(Date.now()));
      if (this.events.length > 0) continue;
      if (this.pending.length > 0 && this.publishDueAt() <= Date.now()) {
        await this.publish();
        continue;
      }
      await this.sleepUntilWork();
    }
  }

  private handle(target: TargetSettings, item: StreamItem): void {
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
    const bytes = item.type === "upsert" ? JSON.stringify(item.object).length : 0;
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
        let committed = 0;
        for (const write of writes) {
          const commit = await materialize(clone, write, this.options.materialize);
          if (commit) committed++;
        }
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

  private async sleepUntilWork(): Promise<void> {
    const deadlines = [this.window.dueAt(), this.pending.length > 0 ? this.publishDueAt() : undefined].filter(
      (d): d is number => d !== undefined,
    );
    const wait = deadlines.length > 0 ? Math.max(0, Math.min(...deadlines) - Date.now()) : 60_000;
    const woken = new Promise<void>((resolve) => (this.wake = resolve));
    await Promise.race([woken, sleep(wait, this.abort.signal)]);
    this.wake = () => undefined;
  }
}
