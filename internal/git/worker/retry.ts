// One retry schedule per branch: after a failure to reach the remote, the next publication is due
// 10 s later, doubling to 5 minutes (equal jitter, so the branches one outage hit do not all come
// back at the same instant), without waiting for another edit. It also remembers since
// when the branch has been failing and why, which every GitTarget on the branch reports.
import { backoffDelay, type Backoff, type RandomSource } from "../../timing/backoff.ts";
import type { Fault } from "../engine/gitexec.ts";
import type { Outage } from "./report.ts";

const retryBackoff: Backoff = { baseMs: 10_000, maxMs: 5 * 60_000, jitter: "equal" };

export class RetrySchedule {
  private outage: Outage | undefined;
  /** Failed attempts in the current run of failures. */
  private failures = 0;

  constructor(private readonly random: RandomSource = Math.random) {}

  /** Records a failed attempt at `now`; the next one is due after the current delay, which doubles. */
  failed(
    error: string,
    now: number,
    { parentMissing, fault }: { parentMissing?: boolean; fault?: Fault } = {},
  ): Outage {
    this.outage = {
      since: this.outage?.since ?? new Date(now),
      error,
      nextAttemptAt: now + backoffDelay(retryBackoff, this.failures++, this.random),
      ...(parentMissing ? { parentMissing } : {}),
      ...(fault === "local" ? { fault } : {}),
    };
    return this.outage;
  }

  /** A publication landed (or had nothing to publish): the outage, if any, is over. */
  succeeded(): void {
    this.outage = undefined;
    this.failures = 0;
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
