// The Argo CD dispatcher: one attempt of a branch worker, carried out against an Application whose
// automated sync the claim holds off (applier-claims.md, "The Argo CD applier"). The attempt
// re-reads its targets, waits out a sync somebody else has set (never replacing it), checks that
// the Application's single source is this repository, records the operation on the claim, and
// sets the sync automated sync would build, pinned to the checked commit, by an update guarded by
// the resourceVersion it read. It follows the sync by the token in its info to Succeeded, Failed
// or Error. An update whose answer was lost is followed by that token; when it is nowhere, the
// Application is written at the version the update was made from, asking only for a refresh,
// after which the update can never land. Automated sync off needs nothing after a sync.
import type { KubeConfig } from "@kubernetes/client-node";
import type { ApplyOperation, ArgoCDClaim } from "../../../generated/v1alpha3/index.ts";
import { statusCodeOf } from "../../kube/resourceclient.ts";
import { sleep } from "../../timing/sleep.ts";
import { keyOf } from "../../types/names.ts";
import { normalizeRepositoryUrl } from "../../types/repourl.ts";
import { ArgoCDClient } from "../argocd/client.ts";
import { syncOperation, syncState } from "../argocd/sync.ts";
import { viewApplication, type Application } from "../argocd/view.ts";
import { applicationRefOf, holdsApplication, syncRefusal } from "../claim/index.ts";
import {
  Dispatcher,
  Ending,
  Follow,
  type BranchAsked,
  type DispatcherOptions,
  type Proved,
} from "./dispatch.ts";
import type { Attempt } from "../decide/index.ts";
import { errorText } from "../../telemetry/errortext.ts";

export interface ArgoCDDispatcherOptions extends DispatcherOptions<ArgoCDClaim> {
  /** How long a sync somebody else set may hold a request before it fails: 5 minutes. */
  waitOutMs?: number;
  /** Makes the client for the Application's cluster. */
  client?: (kubeConfig: KubeConfig, fieldManager: string) => ArgoCDClient;
}

export class ArgoCDDispatcher extends Dispatcher<ArgoCDClaim> {
  readonly name = "argocd-dispatcher";
  protected readonly kind = "ArgoCDClaim";

  constructor(protected override readonly options: ArgoCDDispatcherOptions) {
    super(options);
  }

  protected attempted(claim: ArgoCDClaim, attempt: Attempt, branch: BranchAsked): Follow<ArgoCDClaim> {
    return new Sync(this.options, claim, attempt, this.stopping.signal, branch);
  }

  protected recovered(claim: ArgoCDClaim, attempt: Attempt, operation: ApplyOperation): Follow<ArgoCDClaim> {
    return new RecoveredSync(this.options, claim, attempt, this.stopping.signal, operation);
  }
}

/** Following one sync: reading the Application, and the sync's token, to its end. */
abstract class SyncFollow extends Follow<ArgoCDClaim> {
  protected readonly argo: ArgoCDClient | undefined;

  constructor(
    protected override readonly options: ArgoCDDispatcherOptions,
    claim: ArgoCDClaim,
    attempt: Attempt,
    stop: AbortSignal,
    recovered?: ApplyOperation,
  ) {
    super(options, claim, attempt, stop, recovered);
    const kubeConfig = options.clusterOf(claim);
    const make = options.client ?? ((kc, manager) => new ArgoCDClient(kc, manager));
    this.argo = kubeConfig && make(kubeConfig, options.fieldManager);
  }

  protected async application(): Promise<Application> {
    const ref = applicationRefOf(this.claim);
    const app = await this.argo!.application(ref);
    if (!app) throw new Ending("Failed", `Application ${keyOf(ref)} does not exist.`);
    return app;
  }

  /**
   * Follows the sync carrying `token` until the operation state carrying it has completed. Past
   * the budget it is Unresolved and still followed; then one whose operation somebody removed
   * while it ran (it stays Running for good, since Argo CD processes only a set operation) is
   * Failed.
   */
  protected async followSync(token: string): Promise<Proved> {
    const budgetAt = this.recordedAt + (this.options.budgetMs ?? 5 * 60_000);
    let interval = this.options.pollMs ?? 250;
    for (;;) {
      this.stopped();
      const app = await this.application();
      const state = syncState(app, token);
      if (state.kind === "absent")
        return this.completeWith({
          kind: "failed",
          message: "The sync's state was replaced by another operation's before its end was read.",
        });
      if (state.kind === "completed") return this.completeWith(this.judged(state));
      const unresolved = this.operation?.phase === "Unresolved";
      if (unresolved && app.operation === undefined)
        return this.completeWith({
          kind: "failed",
          message:
            "The sync's operation was removed while it ran (its state stays Running for good): it will not end.",
        });
      if (!unresolved && Date.now() > budgetAt) {
        await this.record({ ...this.operation!, phase: "Unresolved" });
        this.options.onUnresolved?.(this.claim, this.operation!);
      }
      if (this.operation?.phase === "Unresolved") {
        interval = Math.min(interval * 2, 60_000);
        await this.claimStillThere();
      }
      await sleep(interval, this.stop);
    }
  }

  private judged(state: { phase: string; message: string; revision?: string }): Proved {
    if (state.phase !== "Succeeded") return { kind: "failed", message: `${state.phase}: ${state.message}` };
    if (state.revision && state.revision !== this.attempt.commit)
      return {
        kind: "failed",
        message: `Synced ${state.revision}, not ${this.attempt.commit}: the sync was not pinned.`,
      };
    return { kind: "succeeded", message: `Synced ${this.attempt.commit}.` };
  }

  /**
   * Settles whether an update made from `read` landed: its token in the operation or the
   * operation state says it did. Otherwise the Application is written at the version read,
   * asking only for a refresh; once that write is made, or the version moved on, the update can
   * never land. Returns whether it landed.
   */
  protected async landed(read: Application, token: string): Promise<boolean> {
    for (;;) {
      this.stopped();
      if (syncState(await this.application(), token).kind !== "absent") return true;
      try {
        await this.argo!.refresh(read);
        return false;
      } catch (err) {
        // The version moved on: whatever moved it, an update made from `read` cannot land now,
        // so one more read of the token is conclusive.
        if (statusCodeOf(err) === 409) return syncState(await this.application(), token).kind !== "absent";
        await sleep(this.options.pollMs ?? 250, this.stop);
      }
    }
  }
}

/** One attempt, step by step: it sets a sync pinned to the commit. */
class Sync extends SyncFollow {
  constructor(
    options: ArgoCDDispatcherOptions,
    claim: ArgoCDClaim,
    attempt: Attempt,
    stop: AbortSignal,
    private readonly branch: BranchAsked,
  ) {
    super(options, claim, attempt, stop);
  }

  protected async steps(): Promise<Proved> {
    await this.recheckTargets();
    this.checkClaim(holdsApplication, "Application");
    if (!this.argo) throw new Ending("RequestFailed", "The claim's KubeProvider is not connected.");
    const app = await this.waitOut();
    const refused = syncRefusal(
      viewApplication(app, this.options.fieldManager),
      { repository: this.branch.url, branch: this.branch.branch },
      normalizeRepositoryUrl,
    );
    if (refused) throw new Ending("Rejected", refused);
    if (!this.branch.current()) throw new Ending("Stale", "The tip moved before the sync was set.");
    const token = await this.recordRequested();
    const lost = await this.request(app, token);
    // An update that never landed asked for something: it ends Failed, and the worker asks again.
    if (lost) return this.completeWith({ kind: "failed", message: lost });
    await this.record({ ...this.operation!, phase: "Running" });
    return this.followSync(token);
  }

  /**
   * Waits while a sync is set on the Application (somebody else's: ours are never stacked), and
   * returns it as read once none is; one that holds the request past the limit fails it.
   */
  private async waitOut(): Promise<Application> {
    const deadline = Date.now() + (this.options.waitOutMs ?? 5 * 60_000);
    for (;;) {
      this.stopped();
      const app = await this.application();
      if (app.operation === undefined || app.operation === null) return app;
      if (Date.now() > deadline)
        throw new Ending(
          "RequestFailed",
          `A sync somebody else started on Application ${keyOf(applicationRefOf(this.claim))} is still running after 5 minutes; the worker asks again after its backoff.`,
        );
      await sleep(this.options.pollMs ?? 250, this.stop);
    }
  }

  /**
   * Sets the sync onto the version read. A conflict reads again: a sync set meanwhile fails the
   * attempt (never replaced); anything else is written again, up to five times. An answer lost
   * is settled by the token: what is returned is why it never landed, if it did not.
   */
  private async request(read: Application, token: string): Promise<string | undefined> {
    let app = read;
    for (let attempt = 1; ; attempt++) {
      const operation = syncOperation(app, this.attempt.commit, token);
      try {
        await this.argo!.requestSync(app, operation);
        return undefined;
      } catch (err) {
        if (statusCodeOf(err) === 409) {
          const fresh = await this.application();
          if (fresh.operation)
            throw new Ending(
              "RequestFailed",
              "A sync was set on the Application between the read and the update.",
            );
          if (attempt >= 5) throw new Ending("RequestFailed", `The sync could not be set: ${errorText(err)}`);
          app = fresh;
          continue;
        }
        if (await this.landed(app, token)) return undefined;
        return `The answer to the sync request was lost (${errorText(err)}) and it never landed: the Application was refreshed at the version it was made from, so it never can.`;
      }
    }
  }
}

/**
 * A sync a stopped process recorded, followed to its end by its token and asking Argo CD for
 * nothing (applier-claims.md, "Restart recovery"). One recorded and nowhere on the Application
 * may still be an update in flight from a version the stopped process read: the Application is
 * written at its version now, asking for a refresh, so no update from before can land, and the
 * token read once more settles it.
 */
class RecoveredSync extends SyncFollow {
  protected async steps(): Promise<Proved> {
    if (!this.argo) throw new Ending("Failed", "The claim's KubeProvider is not connected.");
    const token = this.operation!.requestToken!;
    const app = await this.application();
    if (syncState(app, token).kind === "absent" && !(await this.landed(app, token)))
      return this.completeWith({
        kind: "failed",
        message: "The operator stopped before this sync was set on the Application: nothing was synced.",
      });
    if (this.operation!.phase === "Requested") await this.record({ ...this.operation!, phase: "Running" });
    return this.followSync(token);
  }
}
