import { CoordinationV1Api, V1MicroTime, type KubeConfig, type V1Lease } from "@kubernetes/client-node";
import type { Logger } from "../telemetry/logger.ts";
import { statusCodeOf, unlessNotFound } from "../kube/resourceclient.ts";
import { sleep } from "../timing/sleep.ts";
import { errorText } from "../telemetry/errortext.ts";

export interface LeaderElectionConfig {
  namespace: string;
  name: string;
  /** Unique per process, such as the pod name plus a random suffix. */
  identity: string;
  /** How long a lease is good for after its last renewal. */
  leaseDurationMs: number;
  /** How long the leader keeps trying to renew before it gives leadership up. */
  renewDeadlineMs: number;
  /** How often candidates try to acquire, and the leader renews. */
  retryPeriodMs: number;
}

/** Milliseconds on the monotonic clock, which never jumps. */
const monotonic = () => performance.now();

/** A Lease's timings, in milliseconds: controller-runtime's LeaseDuration, RenewDeadline and RetryPeriod. */
export type LeaseTimings = Pick<
  LeaderElectionConfig,
  "leaseDurationMs" | "renewDeadlineMs" | "retryPeriodMs"
>;

/**
 * Chosen by measurement (`make bench`'s failover): a replica killed mid-term is replaced within
 * the lease duration of its last renewal, so 8 s puts the next push under 10 s after a SIGKILL
 * (controller-runtime's 15 s put it at 16-18 s). Each Lease held is renewed every 2 s, a quarter
 * of the duration, which leaves a slow renewal 3 s before the renew deadline and a push sent
 * just inside the deadline 3 s to land before anyone may take the Lease (docs/operations.md
 * counts what it costs the API server).
 */
export const defaultLeaseTimings: LeaseTimings = {
  leaseDurationMs: 8_000,
  renewDeadlineMs: 5_000,
  retryPeriodMs: 2_000,
};

/** What a candidate last saw of the lease, and when, by its own clock. */
export interface Observation {
  holder: string;
  renewTime: string;
  /** Local time the holder or renew time last changed. */
  observedAt: number;
}

/** The parts of a Lease an election decision reads. */
export interface LeaseView {
  spec?: { holderIdentity?: string; renewTime?: Date | string };
}

export type LeaseDecision =
  { action: "create" } | { action: "renew" } | { action: "acquire" } | { action: "wait"; holder: string };

/**
 * Whether to take, keep or leave a lease. Expiry is judged by when this candidate saw the
 * lease last change, on its own clock, never by the holder's timestamps: clocks of two
 * machines need not agree, but each measures its own durations well.
 */
export function decideLease(
  lease: LeaseView | undefined,
  observation: Observation | undefined,
  identity: string,
  leaseDurationMs: number,
  now: number,
): LeaseDecision {
  if (!lease) return { action: "create" };
  const holder = lease.spec?.holderIdentity ?? "";
  if (holder === identity) return { action: "renew" };
  if (holder === "") return { action: "acquire" };
  const expired = observation !== undefined && now >= observation.observedAt + leaseDurationMs;
  return expired ? { action: "acquire" } : { action: "wait", holder };
}

/** Updates what a candidate has seen: the clock restarts only when the record changed. */
export function observe(
  previous: Observation | undefined,
  lease: LeaseView | undefined,
  now: number,
): Observation | undefined {
  if (!lease) return undefined;
  const holder = lease.spec?.holderIdentity ?? "";
  const renewTime =
    lease.spec?.renewTime instanceof Date
      ? lease.spec.renewTime.toISOString()
      : (lease.spec?.renewTime ?? "");
  if (previous && previous.holder === holder && previous.renewTime === renewTime) return previous;
  return { holder, renewTime, observedAt: now };
}

export interface LeaderCallbacks {
  onStartedLeading: () => void;
  onStoppedLeading: () => void;
  onNewLeader?: (identity: string) => void;
}

/**
 * Leader election on a coordination.k8s.io Lease. Every write carries the resourceVersion it
 * read, so of two candidates racing for an expired lease only one wins.
 */
export class LeaderElector {
  private readonly api: CoordinationV1Api;
  private observation: Observation | undefined;
  private leading = false;
  private lastLeader = "";

  constructor(
    kubeConfig: KubeConfig,
    private readonly config: LeaderElectionConfig,
    private readonly callbacks: LeaderCallbacks,
    private readonly logger: Logger,
  ) {
    this.api = kubeConfig.makeApiClient(CoordinationV1Api);
  }

  get isLeader(): boolean {
    return this.leading;
  }

  /**
   * Campaigns, then renews, until `signal` aborts or a renewal deadline passes. The deadline is
   * kept on the monotonic clock (the wall clock jumps, and a process frozen past it must find it
   * passed), and a renewal the API server never answers (a partition) is not waited for past it:
   * the leader steps down on time, not when the call gives up.
   */
  async run(signal: AbortSignal): Promise<void> {
    let lastRenewal = 0;
    while (!signal.aborted) {
      const attempt = this.tryAcquireOrRenew().catch((err: unknown) => {
        // A conflict is another candidate's write landing first: the race an election is.
        const level = statusCodeOf(err) === 409 ? "debug" : "error";
        this.logger[level]("lease update failed", { lease: this.config.name, error: errorText(err) });
        return false;
      });
      const deadline = lastRenewal + this.config.renewDeadlineMs - monotonic();
      const ok = this.leading
        ? await Promise.race([
            attempt,
            sleep(Math.max(0, deadline), signal).then(
              () => false,
              () => false,
            ),
          ])
        : await attempt;
      if (ok) {
        lastRenewal = monotonic();
        if (!this.leading) {
          this.leading = true;
          this.logger.info("became leader", { lease: this.config.name, identity: this.config.identity });
          this.callbacks.onStartedLeading();
        }
      } else if (this.leading && monotonic() - lastRenewal >= this.config.renewDeadlineMs) {
        this.leading = false;
        this.logger.error("lost the lease: renewal deadline passed", { lease: this.config.name });
        this.callbacks.onStoppedLeading();
        return;
      }
      await sleep(this.config.retryPeriodMs, signal);
    }
  }

  /** Gives the lease up, so a standby takes over at its next try instead of after expiry. */
  async release(): Promise<void> {
    if (!this.leading) return;
    this.leading = false;
    const { namespace, name } = this.config;
    try {
      const lease = await this.api.readNamespacedLease({ namespace, name });
      if (lease.spec?.holderIdentity !== this.config.identity) return;
      lease.spec = { ...lease.spec, holderIdentity: "", renewTime: new V1MicroTime() };
      await this.api.replaceNamespacedLease({ namespace, name, body: lease });
    } catch (err) {
      this.logger.error("could not release the lease", { lease: name, error: errorText(err) });
    }
    this.callbacks.onStoppedLeading();
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const { namespace, name, identity, leaseDurationMs } = this.config;
    const lease: V1Lease | undefined = await unlessNotFound(
      this.api.readNamespacedLease({ namespace, name }),
    );
    const now = monotonic();
    this.observation = observe(this.observation, lease, now);
    const decision = decideLease(lease, this.observation, identity, leaseDurationMs, now);
    const spec = {
      holderIdentity: identity,
      leaseDurationSeconds: Math.ceil(leaseDurationMs / 1000),
      renewTime: new V1MicroTime(),
    };
    switch (decision.action) {
      case "wait":
        if (decision.holder !== this.lastLeader) {
          this.lastLeader = decision.holder;
          this.callbacks.onNewLeader?.(decision.holder);
        }
        return false;
      case "create":
        await this.api.createNamespacedLease({
          namespace,
          body: {
            metadata: { name, namespace },
            spec: { ...spec, acquireTime: new V1MicroTime(), leaseTransitions: 0 },
          },
        });
        break;
      case "acquire":
        lease!.spec = {
          ...lease!.spec,
          ...spec,
          acquireTime: new V1MicroTime(),
          leaseTransitions: (lease!.spec?.leaseTransitions ?? 0) + 1,
        };
        await this.api.replaceNamespacedLease({ namespace, name, body: lease! });
        break;
      case "renew":
        lease!.spec = { ...lease!.spec, ...spec };
        await this.api.replaceNamespacedLease({ namespace, name, body: lease! });
        break;
    }
    if (this.lastLeader !== identity) {
      this.lastLeader = identity;
      this.callbacks.onNewLeader?.(identity);
    }
    return true;
  }
}
