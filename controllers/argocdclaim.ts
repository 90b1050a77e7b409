// ArgoCDClaim: holds an Argo CD Application's automated sync off while an eligible GitTarget names
// the claim, and gives the switch up when none does. It reads the Application (and, for the Argo
// CD version, the Application CRD) through the claim's KubeProvider on every pass, with no
// informer on Argo CD's kinds, every --applier-claim-recheck-interval (a minute) while Ready,
// which bounds how long automated sync switched on by hand stays on.
import {
  argoCDClaims,
  resourceTypes,
  type ApplierClaimStatus,
  type ArgoCDClaim,
} from "../generated/v1alpha3/index.ts";
import { ArgoCDClient, type VersionCheck } from "../internal/applier/argocd/client.ts";
import { branchOf, viewApplication, type ApplicationView } from "../internal/applier/argocd/view.ts";
import {
  applicationRefOf,
  argoCDClaimFinalizer,
  decideArgoCDClaim,
  type ArgoCDClaimDecision,
  type ArgoCDClaimWorld,
  type Following,
} from "../internal/applier/claim/index.ts";
import { judgeBinding, type Verdict } from "../internal/applier/decide/index.ts";
import type { Controller, Request } from "../internal/operator/controller.ts";
import type { Manager } from "../internal/operator/manager.ts";
import { keyOf } from "../internal/types/names.ts";
import { normalizeRepositoryUrl } from "../internal/types/repourl.ts";
import type { SourceContexts } from "../internal/watch/sourcecontexts.ts";
import { ClaimReconciler, claimConfig, placeInLine, readApplier, setupClaimController } from "./claims.ts";
import { fieldManager } from "../internal/operator/fieldmanager.ts";

/** What was read in the Application's cluster, when the claim's configuration let us read. */
interface Reading {
  verdict: Verdict;
  application?: ApplicationView;
  version?: VersionCheck;
  applierMissing: boolean;
  client?: ArgoCDClient;
  server?: string;
  source?: ApplierClaimStatus["source"];
}

export class ArgoCDClaimReconciler extends ClaimReconciler<ArgoCDClaim, Reading, ArgoCDClaimDecision> {
  protected client() {
    return argoCDClaims(this.manager.kubeConfig);
  }

  protected decide(claim: ArgoCDClaim, reading: Reading): ArgoCDClaimDecision {
    return decideArgoCDClaim(this.world(claim, reading));
  }

  private world(claim: ArgoCDClaim, reading: Reading): ArgoCDClaimWorld {
    const now = new Date();
    const releasingSince = this.clocks.releasingSince(keyOf(claim.metadata));
    return {
      claim,
      now,
      verdict: reading.verdict,
      ...(reading.application ? { application: reading.application } : {}),
      ...(reading.version ? { version: reading.version } : {}),
      applierMissing: reading.applierMissing,
      ...placeInLine(this.informers.claims.list(), claim, this.sourceContexts, applicationRefOf, {
        server: reading.server,
        verdict: reading.verdict,
      }),
      ...(releasingSince ? { releasingSince } : {}),
      unfollowedMs: this.clocks.unfollowedMs(claim.status?.operation, now.getTime()),
    };
  }

  /** Judges the claim, reading the Application's cluster only when its configuration allows, or it holds. */
  protected async read(claim: ArgoCDClaim): Promise<Reading> {
    const config = claimConfig(this.informers, claim, "ArgoCDClaim", applicationRefOf(claim));
    const holding = claim.metadata.finalizers?.includes(argoCDClaimFinalizer) ?? false;
    const read = await readApplier(this.sourceContexts, config, holding, {
      noun: "Application",
      open: (kubeConfig) => new ArgoCDClient(kubeConfig, fieldManager),
      get: (client) => client.application(config.applier),
    });
    if ("reading" in read) return read.reading;
    const { raw, early, ...base } = read;
    const { client } = base;
    const application = viewApplication(raw, fieldManager);
    const found = { ...base, application, applierMissing: false };
    if (early) return { ...found, verdict: early };
    const version = await client.versionCheck();
    const { repoURL, targetRevision } = application.source;
    const branch = branchOf(targetRevision);
    const describe = `Application ${keyOf(config.applier)} syncs ${repoURL} ${
      branch
        ? `branch ${branch}`
        : `at ${targetRevision || "HEAD"}, not a named branch (set spec.source.targetRevision to the branch the GitTargets write)`
    }`;
    const verdict = judgeBinding(config.targets, {
      repository: normalizeRepositoryUrl(repoURL),
      ...(branch ? { branch } : {}),
      describe,
    });
    const revision = (raw.status?.sync as { revision?: string } | undefined)?.revision;
    return {
      ...found,
      verdict,
      version,
      source: {
        kind: "Application",
        namespace: application.ref.namespace,
        name: application.ref.name,
        url: repoURL,
        ...(branch ? { branch } : {}),
        ...(revision ? { revision } : {}),
      },
    };
  }

  protected readonly finalizer = argoCDClaimFinalizer;

  protected async write(step: ArgoCDClaimDecision["step"], reading: Reading): Promise<void> {
    const app = reading.application;
    if (!app) return;
    if (step.kind === "switchOff") await reading.client!.switchOff(app);
    if (step.kind === "giveUp") await reading.client!.giveUp(app);
    if (step.kind === "leaveOff") await reading.client!.leaveOff(app);
  }
}

export function setupArgoCDClaimController(
  manager: Manager,
  sourceContexts: SourceContexts,
  following: Following,
  shardOf?: (request: Request) => string | undefined,
  recheckMs?: number,
): Controller {
  return setupClaimController<ArgoCDClaim>(
    manager,
    "argocdclaim",
    "ArgoCDClaim",
    resourceTypes.ArgoCDClaim,
    (informers, events) =>
      new ArgoCDClaimReconciler(manager, informers, sourceContexts, events, following, recheckMs),
    shardOf,
  );
}
