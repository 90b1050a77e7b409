// FluxClaim: holds a Flux Kustomization suspended while an eligible GitTarget names the claim,
// and hands it back when none does. It reads the Kustomization and its GitRepository through
// the claim's KubeProvider on every pass (no informer on Flux's kinds, so a cluster without Flux
// needs none), every minute while Ready, which bounds how long a resume by hand runs.
import { hostname } from "node:os";
import {
  fluxClaims,
  resourceTypes,
  type ApplierClaimStatus,
  type FluxClaim,
} from "../generated/v1alpha3/index.ts";
import { judgeBinding, judgeConfig, type Verdict } from "../internal/applier/eligibility.ts";
import { FluxClient } from "../internal/applier/flux/client.ts";
import { newToken } from "../internal/applier/operation.ts";
import { otherConsumers } from "../internal/applier/flux/consumers.ts";
import {
  viewGitRepository,
  viewKustomization,
  type KustomizationView,
} from "../internal/applier/flux/view.ts";
import {
  claimedRef,
  decideFluxClaim,
  fluxClaimFinalizer,
  type FluxClaimDecision,
  type FluxClaimWorld,
} from "../internal/applier/fluxclaim.ts";
import { line } from "../internal/applier/line.ts";
import { inFlight } from "../internal/applier/operation.ts";
import type { Following } from "../internal/applier/following.ts";
import { normalizeRepositoryUrl } from "../internal/types/repourl.ts";
import { refOf, keyOf, type NamespacedName } from "../internal/types/names.ts";
import { informerSource } from "../internal/kube/sources.ts";
import { unlessNotFound } from "../internal/kube/resourceclient.ts";
import { Controller, type Reconciler, type Request, type Result } from "../internal/operator/controller.ts";
import { EventRecorder } from "../internal/operator/events.ts";
import { ensureFinalizer, removeFinalizerPatch } from "../internal/operator/finalizers.ts";
import type { SharedInformer } from "../internal/operator/informer.ts";
import type { Manager } from "../internal/operator/manager.ts";
import { generationChanged } from "../internal/operator/predicates.ts";
import { StatusWriter } from "../internal/operator/status.ts";
import type { SourceContexts } from "../internal/watch/sourcecontexts.ts";
import { fieldManager } from "./fieldmanager.ts";
import {
  ClaimClocks,
  claimConfig,
  claimInformers,
  claimStatusFields,
  watchClaimInputs,
  type ClaimInformers,
} from "./claims.ts";

const steadyRecheckMs = 60_000;
const soonRecheckMs = 1_000;

interface Informers extends ClaimInformers {
  claims: SharedInformer<FluxClaim>;
}

/** What was read in the Kustomization's cluster, when the claim's configuration let us read. */
interface Reading {
  verdict: Verdict;
  kustomization?: KustomizationView;
  applierMissing: boolean;
  client?: FluxClient;
  server?: string;
  source?: ApplierClaimStatus["source"];
}

export class FluxClaimReconciler implements Reconciler {
  private readonly status = new StatusWriter(fieldManager);
  private readonly clocks: ClaimClocks;

  constructor(
    private readonly manager: Manager,
    private readonly informers: Informers,
    private readonly sourceContexts: SourceContexts,
    private readonly events: EventRecorder,
    following: Following,
  ) {
    this.clocks = new ClaimClocks(following);
  }

  async reconcile(request: Request): Promise<Result> {
    const key = keyOf(request);
    const cached = this.informers.claims.get(request.name, request.namespace);
    if (!cached) {
      this.clocks.forget(key);
      return {};
    }
    const reading = await this.read(cached);
    // A resumed Kustomization is judged on the claim read uncached: a branch worker records its
    // operation a moment before it resumes, and the cache may not hold that record yet.
    const resumed = reading.kustomization && !reading.kustomization.suspended;
    const claim = resumed
      ? await fluxClaims(this.manager.kubeConfig).get(request.namespace, request.name)
      : cached;
    if (!claim) return {};
    const world = this.world(claim, reading);
    const decision = decideFluxClaim(world);
    const stored = await this.act(claim, reading, decision);
    if (stored) await this.writeStatus(stored, reading, decision);
    this.clocks.trackRelease(
      key,
      decision.conditions.some((c) => c.type === "InControl" && c.reason === "Releasing"),
    );
    return { requeueAfterMs: decision.soon ? soonRecheckMs : steadyRecheckMs };
  }

  private world(claim: FluxClaim, reading: Reading): FluxClaimWorld {
    const now = new Date();
    const applier = claimedRef(claim);
    const queue = reading.server ? this.line(applier, reading.server) : [];
    const first = queue[0]?.claim;
    const self = keyOf(claim.metadata);
    return {
      claim,
      now,
      verdict: reading.verdict,
      ...(reading.kustomization ? { kustomization: reading.kustomization } : {}),
      applierMissing: reading.applierMissing,
      ...(first && keyOf(first) !== self && reading.verdict.kind === "bound" ? { heldBy: first } : {}),
      successor: queue.some((c) => keyOf(c.claim) !== self && c.eligible),
      ...(this.clocks.releasingSince(self) ? { releasingSince: this.clocks.releasingSince(self)! } : {}),
      token: newToken(now),
      unfollowedMs: this.clocks.unfollowedMs(claim.status?.operation, now.getTime()),
    };
  }

  /** Judges the claim, reading the applier's cluster only when its configuration allows, or it holds. */
  private async read(claim: FluxClaim): Promise<Reading> {
    const config = this.config(claim);
    const early = judgeConfig(config);
    const holding = claim.metadata.finalizers?.includes(fluxClaimFinalizer) ?? false;
    if (early && !holding) return { verdict: early, applierMissing: false };
    const context = this.sourceContexts.get(keyOf(config.providerRef));
    if (!context) {
      const verdict = early ?? {
        kind: "pending" as const,
        reason: "NotBound",
        message: `KubeProvider ${keyOf(config.providerRef)} is not connected yet.`,
      };
      return { verdict, applierMissing: false };
    }
    const client = new FluxClient(context.kubeConfig, fieldManager);
    const base = { client, server: context.server };
    const raw = await client.kustomization(config.applier);
    if (!raw) {
      const message = `Kustomization ${keyOf(config.applier)} does not exist.`;
      return {
        ...base,
        verdict: early ?? { kind: "refused", reason: "ApplierNotFound", message },
        applierMissing: true,
      };
    }
    const kustomization = viewKustomization(raw, fieldManager);
    const found = { ...base, kustomization, applierMissing: false };
    if (early) return { ...found, verdict: early };
    const { source } = kustomization;
    if (source.kind !== "GitRepository") {
      const message = `Kustomization ${keyOf(config.applier)} reads a ${source.kind || "source of no kind"}; only a GitRepository's branch can be coordinated.`;
      return { ...found, verdict: { kind: "refused", reason: "SourceMismatch", message } };
    }
    const repository = await client.repository(source);
    if (!repository) {
      const message = `GitRepository ${keyOf(source)}, the Kustomization's source, does not exist.`;
      return { ...found, verdict: { kind: "pending", reason: "NotBound", message } };
    }
    const fetch = viewGitRepository(repository);
    const describe = `GitRepository ${keyOf(source)} fetches ${fetch.url} ${fetch.branch ? `branch ${fetch.branch}` : "at a pinned tag or commit"}`;
    const verdict = judgeBinding(config.targets, {
      repository: normalizeRepositoryUrl(fetch.url),
      ...(fetch.branch ? { branch: fetch.branch } : {}),
      describe,
    });
    const consumers = otherConsumers(
      await client.allKustomizations(),
      source,
      config.applier,
      this.heldElsewhere(claim),
    );
    return {
      ...found,
      verdict,
      source: {
        kind: "GitRepository",
        namespace: source.namespace,
        name: source.name,
        url: fetch.url,
        ...(fetch.branch ? { branch: fetch.branch } : {}),
        ...(fetch.revision ? { revision: fetch.revision } : {}),
        ...(consumers.length > 0 ? { otherConsumers: consumers } : {}),
      },
    };
  }

  private config(claim: FluxClaim) {
    return claimConfig(this.informers, claim, "FluxClaim", claimedRef(claim));
  }

  /** The claims in line for the same Kustomization in the same cluster, first first. */
  private line(applier: NamespacedName, server: string) {
    const same = this.informers.claims.list().filter((c) => {
      const context = this.sourceContexts.get(keyOf(refOf(c.spec.kubeProviderRef, c.metadata.namespace!)));
      return context?.server === server && keyOf(claimedRef(c)) === keyOf(applier);
    });
    return line(
      same.map((c) => ({
        claim: { namespace: c.metadata.namespace!, name: c.metadata.name! },
        creationTimestamp: new Date(c.metadata.creationTimestamp ?? 0).toISOString(),
        operationInFlight: c.status?.operation ? inFlight(c.status.operation) : false,
        holdsFinalizer: c.metadata.finalizers?.includes(fluxClaimFinalizer) ?? false,
        // As the claim's own reconciler last judged it: Configured, or refused only for the line.
        eligible: ["Succeeded", "HeldByAnotherClaim"].includes(
          c.status?.conditions?.find((x) => x.type === "Configured")?.reason ?? "",
        ),
      })),
    );
  }

  /** Keys of the Kustomizations other claims are in control of. */
  private heldElsewhere(claim: FluxClaim): Set<string> {
    return new Set(
      this.informers.claims
        .list()
        .filter((c) => c.metadata.uid !== claim.metadata.uid)
        .filter((c) => c.status?.conditions?.some((x) => x.type === "InControl" && x.status === "True"))
        .map((c) => keyOf(claimedRef(c))),
    );
  }

  /** Carries the decision's step out; returns the claim as stored, or undefined once it is gone. */
  private async act(
    claim: FluxClaim,
    reading: Reading,
    decision: FluxClaimDecision,
  ): Promise<FluxClaim | undefined> {
    const client = fluxClaims(this.manager.kubeConfig);
    const { step } = decision;
    const k = reading.kustomization;
    let stored: FluxClaim | undefined = claim;
    if (step.kind === "addFinalizer") stored = await ensureFinalizer(client, claim, fluxClaimFinalizer);
    if (step.kind === "suspend" && k) await reading.client!.suspend(k, step.token);
    if (step.kind === "release" && k) await reading.client!.release(k);
    if (step.kind === "giveUp" && k) await reading.client!.giveUp(k);
    if (decision.event) {
      await this.events.record(
        claim,
        decision.event.type,
        decision.event.reason,
        "Hold",
        decision.event.note,
      );
    }
    if (step.kind === "removeFinalizer") {
      // Written before the finalizer goes: once it is gone a deleted claim is gone too.
      if (!claim.metadata.deletionTimestamp) await this.writeStatus(claim, reading, decision);
      await unlessNotFound(client.jsonPatch(claim, removeFinalizerPatch(claim, fluxClaimFinalizer)));
      stored = undefined;
    }
    return stored;
  }

  private async writeStatus(claim: FluxClaim, reading: Reading, decision: FluxClaimDecision): Promise<void> {
    await this.status.write(
      fluxClaims(this.manager.kubeConfig),
      claim,
      {
        conditions: decision.conditions,
        fields: claimStatusFields(claim.status ?? {}, decision, reading.source),
      },
      true,
    );
  }
}

export function setupFluxClaimController(
  manager: Manager,
  sourceContexts: SourceContexts,
  following: Following,
): Controller {
  const kc = manager.kubeConfig;
  const events = new EventRecorder(kc, hostname(), manager.logger);
  const informers: Informers = {
    claims: manager.informer<FluxClaim>(informerSource(kc, resourceTypes.FluxClaim)),
    ...claimInformers(manager),
  };
  const controller = watchClaimInputs(
    new Controller(
      "fluxclaim",
      new FluxClaimReconciler(manager, informers, sourceContexts, events, following),
      manager.logger,
    ).for(informers.claims, generationChanged),
    informers,
    informers.claims,
    "FluxClaim",
  );
  manager.addController(controller);
  return controller;
}
