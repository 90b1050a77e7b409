// Shard Leases: how replicas that all run share the shards of work out, on coordination.k8s.io
// Leases in one namespace. Each replica keeps a heartbeat Lease of its own (who is alive) and
// one Lease per shard it holds; every round it lists the set, judges expiry on its own clock
// (as leader election does), and follows decideShares: it takes free shards up to its fair
// share and gives back the ones others should hold. Giving one back hands it over first: the
// work stops, publishing what it holds, while the Lease is still renewed, and only then is it
// released, so no two replicas ever write one shard. A shard whose renewals fail past the
// renew deadline is no longer held here, at once: its holder might be another replica soon.
// Holding changes only with a notice to the listeners (a take, a handover, a loss), never by a
// clock passing unnoticed: a controller that asked while a renewal was slow would otherwise let
// go of a branch nobody gave it back. A second's timer enforces the deadline, however long a
// round takes on a busy API server. Every duration here is measured on the monotonic clock: the
// wall clock jumps, and a process frozen past its Lease must find on waking that it is past it.
// A push asks `safelyHeld` right before it goes (the fence): a branch last renewed past the renew
// deadline is pushed to by nobody here, whatever the timers have noticed yet. The set is watched
// as well as listed: each Lease's change is seen the moment it lands, its expiry timed from then,
// and a round runs at once when one expires or is given back, so a replica killed mid-term is
// replaced a lease duration after its last renewal, not a polling interval later.
import { createHash } from "node:crypto";
import { CoordinationV1Api, V1MicroTime, type KubeConfig, type V1Lease } from "@kubernetes/client-node";
import type { Logger } from "../telemetry/logger.ts";
import { statusCodeOf } from "../kube/resourceclient.ts";
import { sleep } from "../timing/sleep.ts";
import { observe, type Observation } from "./leaderelection.ts";
import { SharedInformer } from "./informer.ts";
import { getJson } from "../kube/rawget.ts";
import { decideShares, type ShardView } from "./shares.ts";
import type { FenceToken } from "../types/fence.ts";
import { errorText } from "../telemetry/errortext.ts";

/** Which Lease of the set a Lease is: `replica` (a heartbeat) or `shard`. */
export const leaseKindLabel = "configbutler.ai/lease";
/** The shard a shard Lease stands for: its name holds only a hash of it. */
export const shardAnnotation = "configbutler.ai/shard";

export interface ShardLeaseConfig {
  namespace: string;
  /** Every Lease of the set is named "<prefix>-replica-<hash>" or "<prefix>-shard-<hash>". */
  prefix: string;
  /** Unique per process, as leader election's. */
  identity: string;
  leaseDurationMs: number;
  /** How long a shard stays held here without a renewal that landed. */
  renewDeadlineMs: number;
  /** How often a round runs. */
  retryPeriodMs: number;
}

export interface ShardWork {
  /** Every shard there is work for now. */
  wanted(): string[];
  /** Stops a shard's work, publishing what it holds; its Lease is released once this settles. */
  handOver(shard: string): Promise<void>;
}

type Holding = {
  state: "held" | "handingOver";
  takenAt: number;
  renewedAt: number;
  lease: V1Lease;
  /** The holding's fencing token: this process's identity and which of its takes this is. */
  token: string;
};

const hashOf = (text: string) => createHash("sha256").update(text).digest("hex").slice(0, 20);
/** Milliseconds on the monotonic clock, which never jumps. */
const monotonic = () => performance.now();
/**
 * How soon a Lease held here is renewed again: a quarter of its duration, so a renewal that is
 * slow for the rest of the renew deadline (3 s of the defaults' 5 s) still lands in time.
 */
const renewEvery = (config: ShardLeaseConfig) => config.leaseDurationMs / 4;

export class ShardLeases {
  private readonly api: CoordinationV1Api;
  private readonly holdings = new Map<string, Holding>();
  private readonly observations = new Map<string, Observation>();
  private readonly listeners: ((shards: string[]) => void)[] = [];
  private readonly handovers = new Set<Promise<void>>();
  /** When each shard still wanted was last given back from here (rule 6 of shares.ts). */
  private readonly givenBack = new Map<string, number>();
  private running: { abort: AbortController; done: Promise<void> } | undefined;
  private draining = false;
  /** How many shards this process has taken: each take's token is new. */
  private takes = 0;
  /** The set's Leases as they change: when each was last seen to change, on this clock. */
  private readonly watched: SharedInformer<V1Lease>;
  /** A timer per Lease another replica holds, set for when it expires unrenewed. */
  private readonly expiries = new Map<string, NodeJS.Timeout>();
  /** When this replica's heartbeat was last renewed (-Infinity: not yet). */
  private heartbeatAt = -Infinity;
  /** Ends the wait between two rounds: a Lease expired or was given back. */
  private wake: (() => void) | undefined;

  constructor(
    kubeConfig: KubeConfig,
    private readonly config: ShardLeaseConfig,
    private readonly work: ShardWork,
    private readonly logger: Logger,
  ) {
    this.api = kubeConfig.makeApiClient(CoordinationV1Api);
    const path = `/apis/coordination.k8s.io/v1/namespaces/${config.namespace}/leases`;
    this.watched = new SharedInformer<V1Lease>(
      kubeConfig,
      { path, list: () => getJson(kubeConfig, path) },
      logger,
    );
    const seen = (lease: V1Lease) => this.seen(lease);
    this.watched.addHandlers({ added: seen, updated: (_, lease) => seen(lease) });
  }

  /** Whether this replica holds a shard now: taken, not handed over, not lost to the deadline. */
  holds(shard: string): boolean {
    return this.holdings.get(shard)?.state === "held";
  }

  /**
   * Why this replica may not push to a shard's branch now, or undefined when it may: it holds the
   * Lease (held, or handing over) and last renewed it within the renew deadline, so nobody can
   * take it before a push sent now lands (the lease duration's rest is the push's margin).
   */
  safelyHeld(shard: string): string | undefined {
    const holding = this.holdings.get(shard);
    if (!holding) return "this replica does not hold the branch's Lease";
    const since = monotonic() - holding.renewedAt;
    if (since < this.config.renewDeadlineMs) return undefined;
    return `the branch's Lease was last renewed ${(since / 1000).toFixed(1)} s ago, past the ${this.config.renewDeadlineMs / 1000} s renew deadline: another replica may take it`;
  }

  /**
   * The fencing token of this process's holding of a shard (held, or handing over: its work
   * still publishes), or why there is none: the shard's state in Redis is written under it. A
   * Lease not safely held may not be claimed with it, so a holder that woke past its deadline
   * never takes the branch's state back from the replica that took the Lease.
   */
  fenceToken(shard: string): FenceToken {
    const holding = this.holdings.get(shard);
    if (!holding) return { refused: "this replica does not hold the branch's Lease" };
    const unsafe = this.safelyHeld(shard);
    return unsafe === undefined ? { token: holding.token } : { token: holding.token, unclaimable: unsafe };
  }

  /** The shards held here now. */
  held(): string[] {
    return [...this.holdings.keys()].filter((s) => this.holds(s));
  }

  /** Calls `listener` with the shards this replica started or stopped holding. */
  onChanged(listener: (shards: string[]) => void): void {
    this.listeners.push(listener);
  }

  /** Stops taking and giving back: the process is stopping; what it holds is renewed until `stop`. */
  drain(): void {
    this.draining = true;
  }

  start(): void {
    const abort = new AbortController();
    this.running = { abort, done: this.run(abort.signal) };
  }

  /**
   * Stops taking and giving, waits for handovers in flight, and releases every shard Lease and
   * the heartbeat: call it once the work has stopped, so the others take over at once.
   */
  async stop(): Promise<void> {
    this.running?.abort.abort();
    await this.running?.done;
    await Promise.allSettled([...this.handovers]);
    const shards = [...this.holdings.keys()];
    await Promise.all(shards.map((s) => this.release(s, false)));
    this.changed(shards);
    await this.api
      .deleteNamespacedLease({ namespace: this.config.namespace, name: this.replicaLeaseName() })
      .catch(() => undefined);
  }

  private async run(signal: AbortSignal): Promise<void> {
    const deadline = setInterval(() => this.dropLate(), 1_000);
    // The watch only hastens a round: a round lists the set itself, so it runs without one.
    void this.watched
      .start()
      .catch((err: unknown) =>
        this.logger.error("could not watch the shard Leases", { error: errorText(err) }),
      );
    try {
      while (!signal.aborted) {
        await this.round().catch((err: unknown) =>
          this.logger.error("shard lease round failed", { error: errorText(err) }),
        );
        this.dropLate();
        const woken = new AbortController();
        this.wake = () => woken.abort();
        await sleep(this.config.retryPeriodMs, AbortSignal.any([signal, woken.signal]));
        this.wake = undefined;
      }
    } finally {
      clearInterval(deadline);
      for (const timer of this.expiries.values()) clearTimeout(timer);
      this.expiries.clear();
      await this.watched.stop();
    }
  }

  /**
   * A Lease of the set changed: the change is observed now, and a Lease another replica holds is
   * looked at again the moment it would expire unrenewed; one given back is looked at at once.
   */
  private seen(lease: V1Lease): void {
    const name = lease.metadata?.name;
    const kind = lease.metadata?.labels?.[leaseKindLabel];
    if (!name || (kind !== "replica" && kind !== "shard")) return;
    const observation = observe(this.observations.get(name), lease, monotonic());
    if (!observation) return;
    this.observations.set(name, observation);
    clearTimeout(this.expiries.get(name));
    this.expiries.delete(name);
    if (observation.holder === this.config.identity) return;
    if (observation.holder === "") return this.wake?.();
    const durationMs = (lease.spec?.leaseDurationSeconds ?? 15) * 1000;
    const inMs = Math.max(0, observation.observedAt + durationMs - monotonic());
    const timer = setTimeout(() => {
      this.expiries.delete(name);
      this.wake?.();
    }, inMs + 1);
    timer.unref();
    this.expiries.set(name, timer);
  }

  /** One round: heartbeat, renew, then take and give back as decideShares says. */
  private async round(): Promise<void> {
    const { namespace } = this.config;
    const listed = await this.api.listNamespacedLease({
      namespace,
      labelSelector: `${leaseKindLabel} in (replica,shard)`,
    });
    const now = monotonic();
    const live: string[] = [];
    const views = new Map<string, ShardView>();
    const current = new Map<string, V1Lease>();
    // What is not listed any more is not watched any more.
    const listedNames = new Set(listed.items.map((l) => l.metadata!.name!));
    for (const name of this.observations.keys()) if (!listedNames.has(name)) this.observations.delete(name);
    for (const lease of listed.items) {
      const name = lease.metadata!.name!;
      const observation = observe(this.observations.get(name), lease, now);
      if (observation) this.observations.set(name, observation);
      const holder = lease.spec?.holderIdentity ?? "";
      const expired =
        observation !== undefined &&
        now >= observation.observedAt + (lease.spec?.leaseDurationSeconds ?? 15) * 1000;
      if (lease.metadata?.labels?.[leaseKindLabel] === "replica") {
        if (holder !== "" && !expired) live.push(holder);
        else if (expired && now >= observation.observedAt + 4 * this.config.leaseDurationMs)
          await this.forget(lease); // a replica long gone: its heartbeat is garbage now
        continue;
      }
      const shard = lease.metadata?.annotations?.[shardAnnotation];
      if (!shard) continue;
      // Released: given back by its holder (not expired), seen so within a lease duration.
      const released = holder === "" && observation !== undefined && !expired;
      views.set(shard, { holder, expired, ...(released ? { released } : {}) });
      current.set(shard, lease);
    }
    await this.heartbeat(
      listed.items.find((l) => l.metadata?.name === this.replicaLeaseName()),
      now,
    );
    await this.renew(current, now);

    // A stopping replica takes and gives nothing: its work is ending, and it releases all at once.
    if (this.draining) return;
    const settling = [...this.holdings]
      .filter(([, h]) => now - h.takenAt < this.config.leaseDurationMs)
      .map(([shard]) => shard);
    for (const [shard, at] of this.givenBack)
      if (now - at >= this.config.leaseDurationMs) this.givenBack.delete(shard);
    const wanted = new Set(this.work.wanted());
    const decision = decideShares({
      self: this.config.identity,
      live,
      wanted: [...wanted].sort(),
      leases: views,
      held: new Set(this.holdings.keys()),
      settling: new Set(settling),
      cooling: new Set(this.givenBack.keys()),
    });
    if (decision.take.length + decision.giveBack.length > 0)
      this.logger.debug("sharing shards out", {
        live,
        wanted: views.size,
        held: this.holdings.size,
        take: decision.take,
        giveBack: decision.giveBack,
      });
    const won = await Promise.all(decision.take.map((shard) => this.take(shard, current.get(shard))));
    const taken = decision.take.filter((_, i) => won[i]);
    if (taken.length > 0) this.changed(taken);
    for (const shard of decision.giveBack) this.handOver(shard, wanted.has(shard));
  }

  /** Renews the heartbeat a quarter of a lease duration after its last renewal, creating it on the first round. */
  private async heartbeat(lease: V1Lease | undefined, now: number): Promise<void> {
    const { namespace } = this.config;
    const name = this.replicaLeaseName();
    const spec = this.spec();
    if (!lease) {
      await this.api.createNamespacedLease({
        namespace,
        body: { metadata: { name, namespace, labels: { [leaseKindLabel]: "replica" } }, spec },
      });
      this.heartbeatAt = now;
      return;
    }
    if (
      lease.spec?.holderIdentity === this.config.identity &&
      now - this.heartbeatAt < renewEvery(this.config)
    )
      return;
    lease.spec = { ...lease.spec, ...spec };
    await this.api.replaceNamespacedLease({ namespace, name, body: lease });
    this.heartbeatAt = now;
  }

  /** Renews every shard held here a quarter of a lease duration after its last renewal; a Lease taken meanwhile is lost. */
  private async renew(current: Map<string, V1Lease>, now: number): Promise<void> {
    const lost: string[] = [];
    const renewals = [...this.holdings].map(async ([shard, holding]) => {
      const lease = current.get(shard);
      if (lease?.spec?.holderIdentity !== this.config.identity) return void lost.push(shard);
      if (now - holding.renewedAt < renewEvery(this.config)) return;
      lease.spec = { ...lease.spec, renewTime: new V1MicroTime() };
      // Counted from when it was sent: the others' clocks start when they see it.
      const sentAt = monotonic();
      try {
        holding.lease = await this.api.replaceNamespacedLease({
          namespace: this.config.namespace,
          name: lease.metadata!.name!,
          body: lease,
        });
        holding.renewedAt = sentAt;
      } catch (err) {
        if (statusCodeOf(err) === 409) lost.push(shard);
        else this.logger.error("shard lease renewal failed", { shard, error: errorText(err) });
      }
    });
    await Promise.all(renewals);
    for (const shard of lost) this.lose(shard, "another replica holds its Lease");
  }

  /** Takes a free shard's Lease, creating it for a new shard; false when another replica won it. */
  private async take(shard: string, lease: V1Lease | undefined): Promise<boolean> {
    const { namespace } = this.config;
    const spec = { ...this.spec(), acquireTime: new V1MicroTime() };
    const sentAt = monotonic();
    try {
      const written = lease
        ? await this.api.replaceNamespacedLease({
            namespace,
            name: lease.metadata!.name!,
            body: {
              ...lease,
              spec: { ...lease.spec, ...spec, leaseTransitions: (lease.spec?.leaseTransitions ?? 0) + 1 },
            },
          })
        : await this.api.createNamespacedLease({
            namespace,
            body: {
              metadata: {
                name: this.shardLeaseName(shard),
                namespace,
                labels: { [leaseKindLabel]: "shard" },
                annotations: { [shardAnnotation]: shard },
              },
              spec: { ...spec, leaseTransitions: 0 },
            },
          });
      const token = `${this.config.identity}#${++this.takes}`;
      this.holdings.set(shard, { state: "held", takenAt: sentAt, renewedAt: sentAt, lease: written, token });
      this.logger.info("took a shard", { shard });
      return true;
    } catch (err) {
      const code = statusCodeOf(err);
      if (code !== 409) this.logger.error("could not take a shard", { shard, error: errorText(err) });
      return false;
    }
  }

  /** Hands a shard over in the background: its work stops while its Lease is still renewed, then the Lease goes. */
  private handOver(shard: string, wanted: boolean): void {
    const holding = this.holdings.get(shard);
    if (holding?.state !== "held") return;
    holding.state = "handingOver";
    this.changed([shard]);
    this.logger.info("handing a shard over", { shard });
    const startedAt = monotonic();
    const done = this.work
      .handOver(shard)
      .then(() => this.logger.info("handed a shard over", { shard, ms: Math.round(monotonic() - startedAt) }))
      .catch((err: unknown) => this.logger.error("shard handover failed", { shard, error: errorText(err) }))
      .then(() => this.release(shard, !wanted))
      .finally(() => this.handovers.delete(done));
    this.handovers.add(done);
  }

  /** Gives a Lease up: its holder emptied, or the Lease deleted when nothing wants the shard any more. */
  private async release(shard: string, remove: boolean): Promise<void> {
    const holding = this.holdings.get(shard);
    if (!holding) return;
    this.holdings.delete(shard);
    const { namespace } = this.config;
    const name = holding.lease.metadata!.name!;
    try {
      if (remove) {
        await this.api.deleteNamespacedLease({ namespace, name });
        return;
      }
      const lease = await this.api.readNamespacedLease({ namespace, name });
      if (lease.spec?.holderIdentity !== this.config.identity) return;
      lease.spec = { ...lease.spec, holderIdentity: "", renewTime: new V1MicroTime() };
      await this.api.replaceNamespacedLease({ namespace, name, body: lease });
      this.givenBack.set(shard, monotonic());
    } catch (err) {
      this.logger.error("could not release a shard", { shard, error: errorText(err) });
    }
  }

  /** A shard held here whose renewals failed past the deadline is not held any more. */
  private dropLate(): void {
    const now = monotonic();
    for (const [shard, holding] of this.holdings)
      if (now - holding.renewedAt >= this.config.renewDeadlineMs) this.lose(shard, "its renewals failed");
  }

  /** A shard lost, not handed over: its work stops at once (a final publication may still run), and nothing is written. */
  private lose(shard: string, why: string): void {
    if (!this.holdings.delete(shard)) return;
    this.logger.error("lost a shard", { shard, why });
    this.changed([shard]);
    const done = this.work
      .handOver(shard)
      .catch(() => undefined)
      .finally(() => this.handovers.delete(done));
    this.handovers.add(done);
  }

  private async forget(lease: V1Lease): Promise<void> {
    await this.api
      .deleteNamespacedLease({ namespace: this.config.namespace, name: lease.metadata!.name! })
      .catch(() => undefined);
  }

  private changed(shards: string[]): void {
    for (const listener of this.listeners) listener(shards);
  }

  private spec() {
    return {
      holderIdentity: this.config.identity,
      leaseDurationSeconds: Math.ceil(this.config.leaseDurationMs / 1000),
      renewTime: new V1MicroTime(),
    };
  }

  private replicaLeaseName(): string {
    return `${this.config.prefix}-replica-${hashOf(this.config.identity)}`;
  }

  private shardLeaseName(shard: string): string {
    return `${this.config.prefix}-shard-${hashOf(shard)}`;
  }
}
