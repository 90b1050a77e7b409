// One retry schedule per branch: after a failure to reach the remote, the next publication is due
// 10 s later, doubling to 5 minutes (equal jitter, so the branches one outage hit do not all come
// back at the same instant), without waiting for another edit. Meanwhile the remote is probed
// every 10 s with one ref advertisement, and the next publication is due at once when a probe
// answers after one that did not, so the first push comes within seconds of the remote's return
// however long the outage; a host that answers every probe but refuses the push is asked to
// take one no more often than the backoff says. It also remembers since when the branch has
// been failing and why, which every GitTarget on the branch reports.
import { backoffDelay, type Backoff, type RandomSource } from "../../timing/backoff.ts";
import type { Fault } from "../engine/gitexec.ts";
import type { Outage } from "./report.ts";

const retryBackoff: Backoff = { baseMs: 10_000, maxMs: 5 * 60_000, jitter: "equal" };
/** How often a remote that cannot be reached is probed between two publication attempts. */
export const outageProbeMs = 10_000;

export class RetrySchedule {
  private outage: Outage | undefined;
  /** Failed attempts in the current run of failures. */
  private failures = 0;
  /** When the remote was last tried, by a publication or a probe. */
  private triedAt = 0;
  /** Whether the last probe of this outage was answered; undefined before the first. */
  private probeAnswered: boolean | undefined;

  constructor(private readonly random: RandomSource = Math.random) {}

  /** Records a failed attempt at `now`; the next one is due after the current delay, which doubles. */
  failed(
    error: string,
    now: number,
    { parentMissing, fault }: { parentMissing?: boolean; fault?: Fault } = {},
  ): Outage {
    this.triedAt = now;
    this.outage = {
      since: this.outage?.since ?? new Date(now),
      error,
      nextAttemptAt: now + backoffDelay(retryBackoff, this.failures++, this.random),
      ...(parentMissing ? { parentMissing } : {}),
      ...(fault === "local" ? { fault } : {}),
    };
    return this.outage;
  }

  /**
   * When the remote is to be probed: 10 s after it was last tried while a remote outage waits
   * for a later attempt; undefined otherwise (no outage, a local fault, or the attempt is due first).
   */
  get probeDueAt(): number | undefined {
    if (!this.outage || this.outage.fault === "local") return undefined;
    const at = this.triedAt + outageProbeMs;
    return at < this.outage.nextAttemptAt ? at : undefined;
  }

  /** A probe at `now` answered, or did not: an answer after an unanswered probe makes the next publication due now. */
  probed(now: number, answered: boolean): void {
    this.triedAt = now;
    if (answered && this.probeAnswered === false && this.outage)
      this.outage = { ...this.outage, nextAttemptAt: now };
    this.probeAnswered = answered;
  }

  /** A publication landed (or had nothing to publish): the outage, if any, is over. */
  succeeded(): void {
    this.outage = undefined;
    this.failures = 0;
    this.probeAnswered = undefined;
  }

  /** The current run of failures, if the branch is in one. */
  get current(): Outage | undefined {
    return this.outage;
  }

  /** When the next attempt may start; 0 when nothing is waiting out a failure. */
  get dueAt(): number {
    return this.outage?.nextAttemptAt ?? 0;
  }
}
