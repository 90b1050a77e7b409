// The webhook dispatcher: one attempt of a branch worker, asked of any tool that takes a signed
// webhook (applier-claims.md, "The aim beyond Flux and Argo CD"), and never a retry of its own:
// the worker decides every retry. The attempt re-reads its targets, checks the claim holds, and
// records the operation on the claim before the POST that starts it; a 2xx makes it Running,
// anything else ends it RequestFailed. How it ends is the claim's spec.completion: the tool's
// signed callback (which the receiver writes to status.operation) or its own write of
// status.operation (Callback, Status: both read here from the claim), or settleAfter past the
// 2xx (Settle). Without an end within the apply budget it is Unresolved: recorded Failed, so
// the claim holds nothing in flight, and reported Unresolved, so the worker asks again.
import type { ApplyOperation, WebhookClaim } from "../../../generated/v1alpha3/index.ts";
import { sleep } from "../../timing/sleep.ts";
import { parseDuration } from "../../types/units.ts";
import { keyOf } from "../../types/names.ts";
import {
  Dispatcher,
  Ending,
  Follow,
  type BranchAsked,
  type DispatcherOptions,
  type Proved,
} from "./dispatch.ts";
import { inFlight, type Attempt } from "../decide/index.ts";
import { holdsWebhook } from "../claim/index.ts";
import { postApply, refuseUrl, type WebhookSecret, type WebhookSecretProblem } from "../webhook/index.ts";

export interface WebhookDispatcherOptions extends DispatcherOptions<WebhookClaim> {
  /** The claim's Secret, read now (internal/applier/webhook/secret.ts). */
  secretOf(claim: WebhookClaim): Promise<WebhookSecret | WebhookSecretProblem>;
  /** --webhook-claim-allow-loopback-http: plain http to a loopback host may be sent to. */
  allowLoopbackHttp: boolean;
}

export class WebhookDispatcher extends Dispatcher<WebhookClaim> {
  readonly name = "webhook-dispatcher";
  protected readonly kind = "WebhookClaim";

  constructor(protected override readonly options: WebhookDispatcherOptions) {
    super(options);
  }

  protected attempted(claim: WebhookClaim, attempt: Attempt, branch: BranchAsked): Follow<WebhookClaim> {
    return new Run(this.options, claim, attempt, this.stopping.signal, branch);
  }

  protected recovered(
    claim: WebhookClaim,
    attempt: Attempt,
    operation: ApplyOperation,
  ): Follow<WebhookClaim> {
    return new Recovered(this.options, claim, attempt, this.stopping.signal, operation);
  }
}

/** How an operation of a webhook applier ends, by the claim's spec.completion. */
abstract class WebhookFollow extends Follow<WebhookClaim> {
  protected constructor(
    protected override readonly options: WebhookDispatcherOptions,
    claim: WebhookClaim,
    attempt: Attempt,
    stop: AbortSignal,
    recovered?: ApplyOperation,
  ) {
    super(options, claim, attempt, stop, recovered);
  }

  /**
   * From the request accepted (at `acceptedAt`) to the operation's end: settled, or reported
   * through the claim's status, within the budget from the record; past it, Unresolved.
   */
  protected async followToEnd(token: string, acceptedAt: number): Promise<Proved> {
    const budgetMs = this.options.budgetMs ?? 5 * 60_000;
    const budgetAt = this.recordedAt + budgetMs;
    const completion = this.claim.spec.completion;
    if (completion?.mode === "Settle") {
      const settleAt = acceptedAt + parseDuration(completion.settleAfter ?? "0s");
      if (settleAt <= budgetAt) {
        await sleep(Math.max(settleAt - Date.now(), 0), this.stop);
        this.stopped();
        const seconds = Math.round((settleAt - acceptedAt) / 1000);
        return this.completeWith({
          kind: "succeeded",
          message: `Taken as applied ${seconds} s after the applier accepted the request (completion Settle).`,
        });
      }
    } else {
      const reported = await this.reportedBy(token, budgetAt);
      if (reported) return reported;
    }
    return this.unresolved(budgetMs);
  }

  /** Reads the claim until its operation with `token` ended, as the tool reported it; undefined past `deadline`. */
  private async reportedBy(token: string, deadline: number): Promise<Proved | undefined> {
    const interval = this.options.pollMs ?? 250;
    for (;;) {
      this.stopped();
      const claim = await this.options.claims.get(this.claim.metadata.namespace, this.claim.metadata.name!);
      if (!claim || claim.metadata.deletionTimestamp)
        throw new Ending("Failed", "The claim was deleted while its apply was followed.");
      this.claim = claim;
      const operation = claim.status?.operation;
      if (operation?.requestToken !== token)
        throw new Ending("Failed", "The claim's status.operation no longer records this apply.");
      if (!inFlight(operation)) {
        this.operation = operation;
        const message = operation.message ?? "";
        return operation.phase === "Succeeded" ? { kind: "succeeded", message } : { kind: "failed", message };
      }
      if (Date.now() > deadline) return undefined;
      await sleep(interval, this.stop);
    }
  }

  /** No end within the budget: recorded Failed, so nothing stays in flight, and ended Unresolved. */
  private async unresolved(budgetMs: number): Promise<never> {
    const how =
      this.claim.spec.completion?.mode === "Settle"
        ? "its settleAfter is longer than the apply budget"
        : "the applier reported no end";
    const message = `Unresolved: ${how} within ${Math.round(budgetMs / 1000)} s; the branch worker asks again.`;
    this.options.onUnresolved?.(this.claim, this.operation!);
    await this.complete("Failed", message);
    throw new Ending("Unresolved", message);
  }
}

/** One attempt, step by step: recorded, then POSTed, then followed to its end. */
class Run extends WebhookFollow {
  constructor(
    options: WebhookDispatcherOptions,
    claim: WebhookClaim,
    attempt: Attempt,
    stop: AbortSignal,
    private readonly branch: BranchAsked,
  ) {
    super(options, claim, attempt, stop);
  }

  protected async steps(): Promise<Proved> {
    await this.recheckTargets();
    this.checkClaim(holdsWebhook, "webhook applier");
    const secret = await this.sendable();
    const token = await this.recordRequested();
    if (!this.branch.current()) throw new Ending("Stale", "The tip moved while the operation was recorded.");
    const answer = await postApply(
      this.claim.spec.url,
      {
        repository: this.branch.url,
        branch: this.branch.branch,
        commit: this.attempt.commit,
        reason: this.reason ?? "CatchUp",
        claim: keyOf(this.claim.metadata),
        token,
      },
      secret,
      parseDuration(this.claim.spec.timeout ?? "10s"),
      this.stop,
    );
    if (answer.kind !== "accepted") {
      const said = answer.kind === "refused" ? answer.message : `unreachable: ${answer.message}`;
      // Never started: the record is withdrawn (dispatch.ts), and the worker retries with backoff.
      throw new Ending(
        "RequestFailed",
        `The applier at ${this.claim.spec.url} refused the request (${said}).`,
      );
    }
    const acceptedAt = Date.now();
    await this.record({
      ...this.operation!,
      phase: "Running",
      message: `The applier answered HTTP ${answer.status}.`,
    });
    return this.followToEnd(token, acceptedAt);
  }

  /** The URL may be sent to, and the Secret signs: else the request is never made. */
  private async sendable(): Promise<WebhookSecret> {
    const refused = refuseUrl(this.claim.spec.url, this.options.allowLoopbackHttp);
    if (refused) throw new Ending("RequestFailed", refused);
    const secret = await this.options.secretOf(this.claim);
    if (secret.kind === "problem") throw new Ending("RequestFailed", secret.message);
    return secret;
  }
}

/**
 * An operation a stopped process left in flight, followed to its end and asking the applier for
 * nothing (applier-claims.md, "Restart recovery"): one still Requested may or may not have been
 * sent, so it ends Failed and the worker asks again (an apply of the same commit twice changes
 * nothing); one Running or Unresolved is followed as the attempt would have followed it, from
 * its record.
 */
class Recovered extends WebhookFollow {
  constructor(
    options: WebhookDispatcherOptions,
    claim: WebhookClaim,
    attempt: Attempt,
    stop: AbortSignal,
    private readonly recorded: ApplyOperation,
  ) {
    super(options, claim, attempt, stop, recorded);
  }

  protected async steps(): Promise<Proved> {
    if (this.recorded.phase === "Requested")
      return this.completeWith({
        kind: "failed",
        message:
          "The operator stopped between recording this apply and hearing the applier's answer: whether it was sent is unknown, so the branch worker asks again.",
      });
    return this.followToEnd(this.recorded.requestToken!, this.recordedAt);
  }
}
