// FluxClaim: holds a Flux Kustomization suspended while an eligible GitTarget names the claim,
// and hands it back when none does. It reads the Kustomization and its GitRepository through
// the claim's KubeProvider on every pass (no informer on Flux's kinds, so a cluster without Flux
// needs none), every --applier-claim-recheck-interval (a minute) while Ready, which bounds how
// long a resume by hand runs.
import {
  fluxClaims,
  resourceTypes,
  type ApplierClaimStatus,
  type FluxClaim,
} from "../generated/v1alpha3/index.ts";
import { judgeBinding, newToken, type Verdict } from "../internal/applier/decide/index.ts";
import { FluxClient } from "../internal/applier/flux/client.ts";
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
  type Following,
} from "../internal/applier/claim/index.ts";
import { normalizeRepositoryUrl } from "../internal/types/repourl.ts";
import { keyOf } from "../internal/types/names.ts";
import type { Controller, Request } from "../internal/operator/controller.ts";
import type { Manager } from "../internal/operator/manager.ts";
import type { SourceContexts } from "../internal/watch/sourcecontexts.ts";
import { fieldManager } from "../internal/operator/fieldmanager.ts";
import { ClaimReconciler, claimConfig, placeInLine, readApplier, setupClaimController } from "./claims.ts";

/** What was read in the Kustomization's cluster, when the claim's configuration let us read. */
interface Reading {
  verdict: Verdict;
  kustomization?: KustomizationView;
  applierMissing: boolean;
  client?: FluxClient;
  server?: string;
  source?: ApplierClaimStatus["source"];
}

export class FluxClaimReconciler extends ClaimReconciler<FluxClaim, Reading, FluxClaimDecision> {
  protected client() {
    return fluxClaims(this.manager.kubeConfig);
  }

  /**
   * A resumed Kustomization is judged on the claim read uncached: a branch worker records its
   * operation a moment before it resumes, and the cache may not hold that record yet.
   */
  protected override async judged(cached: FluxClaim, reading: Reading) {
    const resumed = reading.kustomization && !reading.kustomization.suspended;
    return resumed ? this.client().get(cached.metadata.namespace, cached.metadata.name!) : cached;
  }

  protected decide(claim: FluxClaim, reading: Reading): FluxClaimDecision {
    return decideFluxClaim(this.world(claim, reading));
  }

  private world(claim: FluxClaim, reading: Reading): FluxClaimWorld {
    const now = new Date();
    const releasingSince = this.clocks.releasingSince(keyOf(claim.metadata));
    return {
      claim,
      now,
      verdict: reading.verdict,
      ...(reading.kustomization ? { kustomization: reading.kustomization } : {}),
      applierMissing: reading.applierMissing,
      ...placeInLine(this.informers.claims.list(), claim, this.sourceContexts, claimedRef, {
        server: reading.server,
        verdict: reading.verdict,
        finalizer: fluxClaimFinalizer,
      }),
      ...(releasingSince ? { releasingSince } : {}),
      token: newToken(now),
      unfollowedMs: this.clocks.unfollowedMs(claim.status?.operation, now.getTime()),
    };
  }

  /** Judges the claim, reading the applier's cluster only when its configuration allows, or it holds. */
  protected async read(claim: FluxClaim): Promise<Reading> {
    const config = this.config(claim);
    const holding = claim.metadata.finalizers?.includes(fluxClaimFinalizer) ?? false;
    const read = await readApplier(this.sourceContexts, config, holding, {
      noun: "Kustomization",
      open: (kubeConfig) => new FluxClient(kubeConfig, fieldManager),
      get: (client) => client.kustomization(config.applier),
    });
    if ("reading" in read) return read.reading;
    const { raw, early, ...base } = read;
    const { client } = base;
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

  protected readonly finalizer = fluxClaimFinalizer;

  protected async write(step: FluxClaimDecision["step"], reading: Reading): Promise<void> {
    const k = reading.kustomization;
    if (!k) return;
    if (step.kind === "suspend") await reading.client!.suspend(k, step.token);
    if (step.kind === "release") await reading.client!.release(k);
    if (step.kind === "giveUp") await reading.client!.giveUp(k);
  }
}

export function setupFluxClaimController(
  manager: Manager,
  sourceContexts: SourceContexts,
  following: Following,
  shardOf?: (request: Request) => string | undefined,
  recheckMs?: number,
): Controller {
  return setupClaimController<FluxClaim>(
    manager,
    "fluxclaim",
    "FluxClaim",
    resourceTypes.FluxClaim,
    (informers, events) =>
      new FluxClaimReconciler(manager, informers, sourceContexts, events, following, recheckMs),
    shardOf,
  );
}
