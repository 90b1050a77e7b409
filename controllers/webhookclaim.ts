// WebhookClaim: says whether a branch worker's dispatcher may ask the claim's tool to apply, by
// a signed POST to spec.url. Nothing is held in a cluster (no KubeProvider, no applier, no
// finalizer), so a pass only reads and writes status: the GitTargets naming the claim, its URL
// and its Secret, decided in internal/applier/claim/webhookclaim.ts, with the operation in
// flight ended Failed once nobody follows it. The Secret is read from the API on every pass and
// never watched (the operator watches no Secret): the recheck every
// --applier-claim-recheck-interval (a minute), which runs whatever the claim's state, is what
// picks up a Secret created or fixed after the claim.
import { CoreV1Api } from "@kubernetes/client-node";
import { resourceTypes, webhookClaims, type WebhookClaim } from "../generated/v1alpha3/index.ts";
import {
  decideWebhookClaim,
  judgeWebhookTargets,
  type Following,
  type WebhookClaimDecision,
  type WebhookSecretOutcome,
} from "../internal/applier/claim/index.ts";
import type { AnyClaim } from "../internal/applier/dispatch/index.ts";
import { loadWebhookSecret, refuseUrl } from "../internal/applier/webhook/index.ts";
import { informerSource } from "../internal/kube/sources.ts";
import { Controller, type Reconciler, type Request, type Result } from "../internal/operator/controller.ts";
import { EventRecorder } from "../internal/operator/events.ts";
import { fieldManager } from "../internal/operator/fieldmanager.ts";
import type { SharedInformer } from "../internal/operator/informer.ts";
import type { Manager } from "../internal/operator/manager.ts";
import { generationChanged } from "../internal/operator/predicates.ts";
import { StatusWriter } from "../internal/operator/status.ts";
import { hostname } from "node:os";
import {
  ClaimClocks,
  claimInformers,
  claimStatusFields,
  referringTargets,
  watchClaimInputs,
  type ClaimInformers,
} from "./claims.ts";

export interface WebhookClaimOptions {
  /** --webhook-claim-allow-loopback-http: plain http to a loopback host may be sent to. */
  allowLoopbackHttp: boolean;
  /** With more than one replica: a claim's shard, its first GitTarget's repository branch. */
  shardOf?: (request: Request) => string | undefined;
  /** --applier-claim-recheck-interval: how often a claim is looked at again; a minute by default. */
  recheckMs?: number;
}

/** --applier-claim-recheck-interval's default, as the other claims have it. */
const steadyRecheckMs = 60_000;
/** While the claim is pending or an operation is in flight. */
const soonRecheckMs = 1_000;

export class WebhookClaimReconciler implements Reconciler {
  private readonly status = new StatusWriter(fieldManager);
  private readonly clocks: ClaimClocks;
  private readonly core: CoreV1Api;

  constructor(
    private readonly manager: Manager,
    private readonly informers: ClaimInformers & { claims: SharedInformer<WebhookClaim> },
    private readonly events: EventRecorder,
    following: Following,
    private readonly options: WebhookClaimOptions,
  ) {
    this.clocks = new ClaimClocks(following);
    this.core = manager.kubeConfig.makeApiClient(CoreV1Api);
  }

  async reconcile(request: Request): Promise<Result> {
    const claim = this.informers.claims.get(request.name, request.namespace);
    if (!claim) return {};
    const decision = decideWebhookClaim(await this.world(claim));
    const { event } = decision;
    if (event) await this.events.record(claim, event.type, event.reason, "Configure", event.note);
    await this.writeStatus(claim, decision);
    return { requeueAfterMs: decision.soon ? soonRecheckMs : (this.options.recheckMs ?? steadyRecheckMs) };
  }

  /** What the decision reads: who names the claim, its URL, and its Secret unless nothing names it. */
  private async world(claim: WebhookClaim) {
    const verdict = judgeWebhookTargets(this.targets(claim));
    const secret = verdict.kind === "notReferenced" ? undefined : await this.secret(claim);
    const urlRefusal = refuseUrl(claim.spec.url, this.options.allowLoopbackHttp);
    const now = new Date();
    return {
      claim,
      now,
      verdict,
      ...(secret ? { secret } : {}),
      ...(urlRefusal ? { urlRefusal } : {}),
      unfollowedMs: this.clocks.unfollowedMs(claim.status?.operation, now.getTime()),
    };
  }

  /**
   * The GitTargets naming the claim, with what each writes. referringTargets reads only the
   * claim's namespace and name; its AnyClaim names the claims that have a KubeProvider.
   */
  private targets(claim: WebhookClaim) {
    return referringTargets(this.informers, claim as unknown as AnyClaim, "WebhookClaim");
  }

  /** Whether the Secret can be used; what it holds stays here, never in a decision. */
  private async secret(claim: WebhookClaim): Promise<WebhookSecretOutcome> {
    const read = await loadWebhookSecret(this.core, claim);
    return read.kind === "loaded" ? { kind: "loaded" } : read;
  }

  /** Conditions and status.operation, onto the version the decision was made from. */
  private async writeStatus(claim: WebhookClaim, decision: WebhookClaimDecision): Promise<void> {
    await this.status.write(
      webhookClaims(this.manager.kubeConfig),
      claim,
      { conditions: decision.conditions, fields: claimStatusFields(claim.status ?? {}, decision, undefined) },
      true,
    );
  }
}

/**
 * Registers the WebhookClaim controller: its reconciler over the kind's informer, watching what
 * the claims' eligibility reads as the other claims watch it (GitTargets, GitBranches,
 * GitProviders; KubeProviders and namespace labels, which a WebhookClaim does not read, only
 * wake it). No Secret is watched.
 */
export function setupWebhookClaimController(
  manager: Manager,
  following: Following,
  options: WebhookClaimOptions,
): Controller {
  const kc = manager.kubeConfig;
  const events = new EventRecorder(kc, hostname(), manager.logger);
  const claims = manager.informer<WebhookClaim>(informerSource(kc, resourceTypes.WebhookClaim));
  const informers = { claims, ...claimInformers(manager) };
  const reconciler = new WebhookClaimReconciler(manager, informers, events, following, options);
  const controller = watchClaimInputs(
    new Controller(
      "webhookclaim",
      reconciler,
      manager.logger,
      options.shardOf ? { shardOf: options.shardOf } : {},
    ).for(claims, generationChanged),
    informers,
    claims,
    "WebhookClaim",
  );
  manager.addController(controller);
  return controller;
}
