// The watch manager: for one source cluster, it keeps the type registry fresh and runs, for
// every GitTarget, one CollectionWatch per planned collection. A plan pass keeps unaffected
// watches running, starts new collections, stops dropped ones, and replaces a collection only
// when its served version changed.
import type { KubeConfig } from "@kubernetes/client-node";
import type { Logger } from "../telemetry/logger.ts";
import type { Runnable } from "../operator/manager.ts";
import type { TargetRef } from "../rulestore/compile.ts";
import type { RuleStore } from "../rulestore/store.ts";
import { TypeRegistry } from "../typeset/registry.ts";
import type { Attributor } from "./attributor.ts";
import { DefaultsProver } from "./defaultsprover.ts";
import { CollectionWatch, type CollectionState } from "./collectionwatch.ts";
import { Cursor, MemoryCursorStore, type CursorStore } from "./cursor.ts";
import { discover } from "./discovery.ts";
import { GitTargetEventStream } from "../stream/stream.ts";
import { planCollections, type WatchPlan } from "./watchedtypes.ts";
import { groupResourceOf, type Collection } from "../stream/collection.ts";
import { sleep, untilAborted } from "../timing/sleep.ts";
import { backoffDelay, type Backoff } from "../timing/backoff.ts";
import { keyOf as targetKey } from "../types/names.ts";
import {
  apiCatalogRefreshDuration,
  apiCatalogRefreshes,
  apiCatalogResources,
  watchPlanChanges,
  watchPlanPasses,
} from "../telemetry/instruments.ts";
import { errorText } from "../telemetry/errortext.ts";

/** Why a target's watches were planned: it was newly served, its rules changed, or the catalog did. */
export type PlanTrigger = "served" | "rules" | "catalog";

export interface WatchManagerOptions {
  /** How often discovery runs again; the seeds' cadence is 30 s. */
  catalogRefreshMs?: number;
  /** With attribution on: who made each live change of a collection. */
  attribute?: (collection: Collection) => Attributor;
  /** Where collections keep their resume cursors: Redis with --redis-addr, else this process. */
  cursors?: CursorStore;
  /** The KubeProvider this source is, as <namespace>/<name>: the source_cluster label. */
  source?: string;
}

export interface StreamSummary {
  total: number;
  running: number;
  replaying: number;
  blocked: number;
}

/** 1 s doubling to 30 s, jittered: a source that cannot be discovered at start is asked again. */
const discoveryBackoff: Backoff = { baseMs: 1000, maxMs: 30_000, jitter: "equal" };

/** A served target's collection watches by state, and what its last plan resolved. */
export interface TargetStreams {
  target: TargetRef;
  summary: StreamSummary;
  plan: WatchPlan | undefined;
}

/** How long a target handed to another replica waits for its branch worker to take what its stream holds. */
const readOutMs = 10_000;

export class WatchManager implements Runnable {
  readonly name = "watch-manager";
  readonly needLeaderElection = true;
  readonly registry = new TypeRegistry();
  private readonly streams = new Map<string, GitTargetEventStream>();
  private readonly watches = new Map<string, Map<string, CollectionWatch>>();
  private readonly plans = new Map<string, WatchPlan>();
  /** The targets this source serves: the GitTarget controller decides which source serves which. */
  private readonly served = new Map<string, TargetRef>();
  /** Each served target's uid, which its collections' cursors are keyed by. */
  private readonly uids = new Map<string, string>();
  private readonly cursors: CursorStore;
  /** One proof of server defaults per source, shared by every collection it watches. */
  private readonly defaults: DefaultsProver;
  private started = false;
  private readonly streamListeners: ((target: TargetRef) => void)[] = [];

  constructor(
    private readonly kubeConfig: KubeConfig,
    private readonly rules: RuleStore,
    private readonly logger: Logger,
    private readonly options: WatchManagerOptions = {},
  ) {
    this.cursors = options.cursors ?? new MemoryCursorStore();
    // A kind whose proof is newly Forbidden (or allowed again) changes what the status of every
    // target that follows it says.
    this.defaults = new DefaultsProver(kubeConfig, logger, {
      onForbiddenChanged: (kind) => {
        for (const target of this.served.values())
          if (this.kindsOf(target).has(kind)) for (const listener of this.streamListeners) listener(target);
      },
    });
    rules.onChange((targets) => {
      if (!this.started) return;
      for (const target of targets) if (this.served.has(targetKey(target))) this.plan(target, "rules");
    });
  }

  /** Calls `listener` whenever one of a target's collections changes state, for StreamsRunning. */
  onStreamsChanged(listener: (target: TargetRef) => void): void {
    this.streamListeners.push(listener);
  }

  /** Starts serving a target: its rules are planned against this source from now on. */
  serve(target: TargetRef, uid = ""): void {
    const key = targetKey(target);
    if (this.served.has(key)) return;
    this.served.set(key, target);
    this.uids.set(key, uid);
    if (this.started) this.plan(target, "served");
  }

  /**
   * Stops serving a target: its watches stop and its stream ends. A target that is gone forgets
   * its cursors. One whose work moves to another replica leaves each cursor at the last event
   * its branch worker took, so the replica that takes it over resumes exactly there; with
   * `readOut` (a worker reads the stream) it first lets the worker take what the stream holds,
   * a bounded wait.
   */
  async release(target: TargetRef, cursors: "forget" | "leave" | "readOut" = "forget"): Promise<void> {
    const key = targetKey(target);
    if (!this.served.delete(key)) return;
    this.uids.delete(key);
    const running = [...(this.watches.get(key)?.values() ?? [])];
    this.watches.delete(key);
    this.plans.delete(key);
    await Promise.all(running.map((w) => w.stop(cursors !== "forget")));
    const stream = this.streams.get(key);
    this.streams.delete(key);
    stream?.close();
    if (cursors === "forget") return;
    if (cursors === "readOut" && stream && !(await stream.readOutWithin(readOutMs)))
      this.logger.info(
        "a released stream was not read out in time; its cursors stay at the last item taken",
        {
          target: key,
          pending: stream.pending,
          reader: stream.readerAt,
        },
      );
    for (const watch of running) watch.leaveCursor();
  }

  /**
   * Replays a target's collections again as fresh snapshots: the named ones (by collection
   * key), or all of them. The write side asks when it dropped what a snapshot restores.
   */
  resync(target: TargetRef, collections?: readonly string[]): void {
    for (const [key, watch] of this.watches.get(targetKey(target)) ?? []) {
      if (!collections || collections.includes(key)) watch.resync();
    }
  }

  serves(target: TargetRef): boolean {
    return this.served.has(targetKey(target));
  }

  /** The targets served, each with the uid it was served with. */
  servedTargets(): (TargetRef & { uid: string })[] {
    return [...this.served].map(([key, target]) => ({ ...target, uid: this.uids.get(key) ?? "" }));
  }

  /** The ordered stream of a GitTarget's items; created on first ask, kept while the manager runs. */
  streamFor(target: TargetRef): GitTargetEventStream {
    const key = targetKey(target);
    let stream = this.streams.get(key);
    if (!stream) {
      stream = new GitTargetEventStream(target);
      this.streams.set(key, stream);
    }
    return stream;
  }

  /** The last plan for a target: its collections, and the rules that resolved to nothing. */
  planOf(target: TargetRef): WatchPlan | undefined {
    return this.plans.get(targetKey(target));
  }

  summary(target: TargetRef): StreamSummary {
    const states: CollectionState[] = [...(this.watches.get(targetKey(target))?.values() ?? [])].map(
      (w) => w.state,
    );
    return {
      total: states.length,
      running: states.filter((s) => s === "Running").length,
      replaying: states.filter((s) => s === "Replaying").length,
      blocked: states.filter((s) => s === "Blocked").length,
    };
  }

  /**
   * The kinds (group/resource) a target follows whose server defaults cannot be proven, because
   * the credential may not make their dry-run create; sorted.
   */
  unprovenKinds(target: TargetRef): string[] {
    return [...this.kindsOf(target)].filter((kind) => this.defaults.refuses(kind)).sort();
  }

  /** The kinds (group/resource) a target follows. */
  private kindsOf(target: TargetRef): Set<string> {
    const watches = this.watches.get(targetKey(target))?.values() ?? [];
    return new Set([...watches].map((watch) => groupResourceOf(watch.collection)));
  }

  /**
   * Whether a target has collections, every one running with its last snapshot taken by the
   * branch worker from the stream: the watch side of "its initial snapshots are published".
   */
  snapshotsHandedOver(target: TargetRef): boolean {
    const watches = [...(this.watches.get(targetKey(target))?.values() ?? [])];
    return watches.length > 0 && watches.every((w) => w.state === "Running" && w.snapshotTaken);
  }

  async start(signal: AbortSignal): Promise<void> {
    if (!(await this.firstDiscovery(signal))) return;
    this.started = true;
    for (const target of this.served.values()) this.plan(target, "served");
    // A pass still running is not started again: on a throttled client a slow pass would
    // otherwise queue the next behind it, and the queue would grow without end.
    let refreshing = false;
    const timer = setInterval(() => {
      if (refreshing) return;
      refreshing = true;
      this.refresh()
        .catch((err: unknown) => this.logger.error("discovery failed", { error: errorText(err) }))
        .finally(() => (refreshing = false));
    }, this.options.catalogRefreshMs ?? 30_000);
    await untilAborted(signal);
    clearInterval(timer);
    this.started = false;
    // The process stops, not the collections: the next process resumes from their cursors,
    // each at the last event its branch worker took (the workers stop beside the watches).
    const running = [...this.watches.values()].flatMap((m) => [...m.values()]);
    await Promise.all(running.map((w) => w.stop(true)));
    this.watches.clear();
    for (const stream of this.streams.values()) stream.close();
    for (const watch of running) watch.leaveCursor();
  }

  /**
   * The first discovery, tried again with backoff until it answers: a source that cannot be
   * reached (or answers too slowly for its client's timeout) at start is waited for, never
   * given up on. False when the context stopped first.
   */
  private async firstDiscovery(signal: AbortSignal): Promise<boolean> {
    for (let failures = 0; !signal.aborted; failures++) {
      try {
        await this.refresh();
        return true;
      } catch (err) {
        const delay = backoffDelay(discoveryBackoff, failures);
        this.logger.error("discovery failed; trying again", {
          source: this.options.source ?? "",
          error: errorText(err),
          retryInMs: delay,
        });
        await sleep(delay, signal);
      }
    }
    return false;
  }

  /** Runs discovery; when the served types changed, every target is planned again. */
  async refresh(): Promise<void> {
    // A source nobody mirrors costs nothing: no discovery until a target is served.
    if (this.started && this.served.size === 0) return;
    const source_cluster = this.options.source ?? "";
    const began = performance.now();
    let scan;
    try {
      scan = await discover(this.kubeConfig);
    } catch (err) {
      apiCatalogRefreshes.inc({ source_cluster, outcome: "failed" });
      throw err;
    }
    const changed = this.registry.update(scan, Date.now());
    apiCatalogRefreshDuration.observe({ source_cluster }, (performance.now() - began) / 1000);
    apiCatalogRefreshes.inc({ source_cluster, outcome: changed ? "changed" : "unchanged" });
    apiCatalogResources.set({ source_cluster }, this.registry.all().length);
    if (changed && this.started) for (const target of this.served.values()) this.plan(target, "catalog");
  }

  /** Each served target's collection watches by state, and what its last plan resolved: read at scrape time. */
  *streamStates(): Generator<TargetStreams> {
    for (const [key, target] of this.served)
      yield { target, summary: this.summary(target), plan: this.plans.get(key) };
  }

  /** Brings one target's running watches in line with its rules and the served types. */
  plan(target: TargetRef, trigger: PlanTrigger = "rules"): void {
    const key = targetKey(target);
    const labels = { gittarget_namespace: target.namespace, gittarget_name: target.name };
    watchPlanPasses.inc({ ...labels, trigger });
    const plan = planCollections(this.rules.rulesFor(target), this.registry.all());
    this.plans.set(key, plan);
    const running = this.watches.get(key) ?? new Map<string, CollectionWatch>();
    this.watches.set(key, running);
    const wanted = new Map(plan.collections.map((c) => [c.key, c]));
    for (const [collectionKey, watch] of running) {
      const next = wanted.get(collectionKey);
      if (!next || next.version !== watch.collection.version) {
        running.delete(collectionKey);
        void watch.stop();
        watchPlanChanges.inc({ ...labels, action: next ? "replaced" : "stopped" });
      } else watch.exclude(plan.exclusions.get(collectionKey) ?? []);
    }
    for (const [collectionKey, collection] of wanted) {
      if (running.has(collectionKey)) continue;
      const attributor = this.options.attribute?.(collection);
      const { group, resource, namespace, labelSelector } = collection;
      const targetUid = this.uids.get(key) ?? "";
      const watch = new CollectionWatch(this.kubeConfig, collection, this.streamFor(target), this.logger, {
        onStateChange: () => {
          for (const listener of this.streamListeners) listener(target);
        },
        ...(attributor ? { attributor } : {}),
        cursor: new Cursor(this.cursors, { targetUid, group, resource, namespace, labelSelector }),
        projector: this.defaults,
        exclusions: plan.exclusions.get(collectionKey) ?? [],
      });
      running.set(collectionKey, watch);
      watch.start();
      watchPlanChanges.inc({ ...labels, action: "started" });
    }
  }
}
