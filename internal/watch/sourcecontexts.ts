// One source context per KubeProvider, keyed by its namespace/name: the provider's client, its
// type registry and its watches. Two providers for the same API server stay two contexts, so a
// failure or a credential change of one never touches another's watches.
import type { KubeConfig } from "@kubernetes/client-node";
import type { Logger } from "../telemetry/logger.ts";
import type { Runnable } from "../operator/manager.ts";
import type { TargetRef } from "../rulestore/compile.ts";
import type { RuleStore } from "../rulestore/store.ts";
import { WatchManager, type TargetStreams } from "./manager.ts";
import type { Attributor } from "./attributor.ts";
import type { CursorStore } from "./cursor.ts";
import type { Collection } from "../stream/collection.ts";
import { untilAborted } from "../timing/sleep.ts";
import { closeThrottle } from "../kube/throttle.ts";
import { errorText } from "../telemetry/errortext.ts";

export interface SourceContext {
  key: string;
  /** What the context was built from; a different fingerprint rebuilds it. */
  fingerprint: string;
  server: string;
  /** The provider's connection, for whatever else reaches that cluster through it (applier claims). */
  kubeConfig: KubeConfig;
  watchManager: WatchManager;
}

interface Running {
  context: SourceContext;
  abort: AbortController;
  done: Promise<void>;
}

export class SourceContexts implements Runnable {
  readonly name = "source-contexts";
  readonly needLeaderElection = true;
  private readonly contexts = new Map<string, Running | { context: SourceContext }>();
  private signal: AbortSignal | undefined;
  private readonly streamListeners: ((target: TargetRef) => void)[] = [];

  constructor(
    private readonly rules: RuleStore,
    private readonly logger: Logger,
    private readonly catalogRefreshMs = 30_000,
    /** With attribution on: who made a live change, by the audit route the provider's facts arrive on. */
    private readonly attribution?: (route: string, collection: Collection) => Attributor,
    /** Where every context's collections keep their resume cursors. */
    private readonly cursors?: CursorStore,
  ) {}

  /** Whether attribution is on, so a live write's user is known: what spec.excludeUsers needs. */
  get attributing(): boolean {
    return this.attribution !== undefined;
  }

  /** Calls `listener` when a collection of a target in any context changes state. */
  onStreamsChanged(listener: (target: TargetRef) => void): void {
    this.streamListeners.push(listener);
  }

  /** Replays a target's collections in whichever context serves it. */
  resync(target: TargetRef, collections?: readonly string[]): void {
    for (const { context } of this.contexts.values()) {
      if (context.watchManager.serves(target)) context.watchManager.resync(target, collections);
    }
  }

  /**
   * Whether every collection of a target has a settled snapshot (its watch runs) that the branch
   * worker has taken from the stream: the watch side of what an applier waits for before it is
   * asked anything (the worker adds that it published them). A target with no planned
   * collection, or a blocked or replaying one, is not settled.
   */
  snapshotsSettled(target: TargetRef): boolean {
    for (const { context } of this.contexts.values()) {
      if (!context.watchManager.serves(target)) continue;
      return context.watchManager.snapshotsHandedOver(target);
    }
    return false;
  }

  /** Every context's targets with their watches' states and last plan, for the gauges read at scrape time. */
  *streamStates(): Generator<TargetStreams> {
    for (const { context } of this.contexts.values()) yield* context.watchManager.streamStates();
  }

  get(key: string): SourceContext | undefined {
    return this.contexts.get(key)?.context;
  }

  /**
   * The context for a provider, built from `kubeConfig`. The same fingerprint keeps the running
   * context; a new one (a rotated Secret, a changed spec) replaces it, and the targets it served
   * move to the replacement, which starts their watches with fresh snapshots.
   */
  async ensure(
    key: string,
    fingerprint: string,
    kubeConfig: KubeConfig,
    server: string,
    auditRoute = key.replace("/", "."),
  ): Promise<SourceContext> {
    const existing = this.contexts.get(key);
    if (existing?.context.fingerprint === fingerprint) return existing.context;
    const served = existing ? await this.stop(key) : [];
    const context: SourceContext = {
      key,
      fingerprint,
      server,
      kubeConfig,
      watchManager: new WatchManager(kubeConfig, this.rules, this.logger, {
        catalogRefreshMs: this.catalogRefreshMs,
        source: key,
        ...(this.attribution ? { attribute: (c: Collection) => this.attribution!(auditRoute, c) } : {}),
        ...(this.cursors ? { cursors: this.cursors } : {}),
      }),
    };
    context.watchManager.onStreamsChanged((target) => {
      for (const listener of this.streamListeners) listener(target);
    });
    for (const { uid, ...target } of served) context.watchManager.serve(target, uid);
    this.contexts.set(key, this.signal ? this.run(context, this.signal) : { context });
    if (existing) this.logger.info("source context rebuilt", { provider: key });
    return context;
  }

  /** Stops and forgets a provider's context, as when the provider is deleted. */
  async release(key: string): Promise<void> {
    await this.stop(key);
  }

  async start(signal: AbortSignal): Promise<void> {
    this.signal = signal;
    for (const [key, entry] of this.contexts) this.contexts.set(key, this.run(entry.context, signal));
    await untilAborted(signal);
    await Promise.all([...this.contexts.keys()].map((key) => this.stop(key)));
    this.signal = undefined;
  }

  private run(context: SourceContext, parent: AbortSignal): Running {
    const abort = new AbortController();
    void untilAborted(parent).then(() => abort.abort());
    const done = context.watchManager.start(abort.signal).catch((err: unknown) => {
      const meta = { provider: context.key, error: errorText(err) };
      // Once stopped, its client is closed and what still waited fails: not an error of its own.
      if (abort.signal.aborted) this.logger.info("source context stopped during discovery", meta);
      else this.logger.error("source context stopped on an error", meta);
    });
    return { context, abort, done };
  }

  /** Stops a context and returns the targets it served. */
  private async stop(key: string): Promise<(TargetRef & { uid: string })[]> {
    const entry = this.contexts.get(key);
    if (!entry) return [];
    this.contexts.delete(key);
    const served = entry.context.watchManager.servedTargets();
    closeThrottle(entry.context.kubeConfig);
    if ("abort" in entry) {
      entry.abort.abort();
      await entry.done;
    }
    return served;
  }
}
