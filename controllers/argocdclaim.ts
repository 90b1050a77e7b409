// ArgoCDClaim: holds an Argo CD Application's automated sync off while an eligible GitTarget names
// the claim, and gives the switch up when none does. It reads the Application (and, for the Argo
// CD version, the Application CRD) through the claim's KubeProvider on every pass, with no
// informer on Argo CD's kinds, every minute while Ready, which bounds how long automated sync
// switched on by hand stays on.
import { hostname } from "node:os";
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
} from "../internal/applier/argocdclaim.ts";
import { judgeBinding, judgeConfig, type Verdict } from "../internal/applier/eligibility.ts";
import type { Following } from "../internal/applier/following.ts";
import { line } from "../internal/applier/line.ts";
import { unlessNotFound } from "../internal/kube/resourceclient.ts";
import { informerSource } from "../internal/kube/sources.ts";
import { Controller, type Reconciler, type Request, type Result } from "../internal/operator/controller.ts";
import { EventRecorder } from "../internal/operator/events.ts";
import { ensureFinalizer, removeFinalizerPatch } from "../internal/operator/finalizers.ts";
import type { SharedInformer } from "../internal/operator/informer.ts";
import type { Manager } from "../internal/operator/manager.ts";
import { generationChanged } from "../internal/operator/predicates.ts";
import { StatusWriter } from "../internal/operator/status.ts";
import { keyOf, refOf, type NamespacedName } from "../internal/types/names.ts";
import { normalizeRepositoryUrl } from "../internal/types/repourl.ts";
import type { SourceContexts } from "../internal/watch/sourcecontexts.ts";
import {
  ClaimClocks,
  claimConfig,
  claimInformers,
  claimStatusFields,
  watchClaimInputs,
  type ClaimInformers,
} from "./claims.ts";
import { fieldManager } from "./fieldmanager.ts";

const steadyRecheckMs = 60_000;
const soonRecheckMs = 1_000;

interface Informers extends ClaimInformers {
  claims: SharedInformer<ArgoCDClaim>;
}

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

export class ArgoCDClaimReconciler implements Reconciler {
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
    const claim = this.informers.claims.get(request.name, request.namespace);
    if (!claim) {
      this.clocks.forget(key);
      return {};
    }
    const reading = await this.read(claim);
    const decision = decideArgoCDClaim(this.world(claim, reading));
    const stored = await this.act(claim, reading, decision);
    if (stored) await this.writeStatus(stored, reading, decision);
    this.clocks.trackRelease(
      key,
      decision.conditions.some((c) => c.type === "InControl" && c.reason === "Releasing"),
    );
    return { requeueAfterMs: decision.soon ? soonRecheckMs : steadyRecheckMs };
  }

  private world(claim: ArgoCDClaim, reading: Reading): ArgoCDClaimWorld {
    const now = new Date();
    const queue = reading.server ? this.line(applicationRefOf(claim), reading.server) : [];
    const first = queue[0]?.claim;
    const self = keyOf(claim.metadata);
    const releasingSince = this.clocks.releasingSince(self);
    return {
      claim,
      now,
      verdict: reading.verdict,
      ...(reading.application ? { application: reading.application } : {}),
      ...(reading.version ? { version: reading.version } : {}),
      applierMissing: reading.applierMissing,
      ...(first && keyOf(first) !== self && reading.verdict.kind === "bound" ? { heldBy: first } : {}),
      successor: queue.some((c) => keyOf(c.claim) !== self && c.eligible),
      ...(releasingSince ? { releasingSince } : {}),
      unfollowedMs: this.clocks.unfollowedMs(claim.status?.operation, now.getTime()),
    };
  }

  /** Judges the claim, reading the Application's cluster only when its configuration allows, or it holds. */
  private async read(claim: ArgoCDClaim): Promise<Reading> {
    const config = claimConfig(this.informers, claim, "ArgoCDClaim", applicationRefOf(claim));
    const early = judgeConfig(config);
    const holding = claim.metadata.finalizers?.includes(argoCDClaimFinalizer) ?? false;
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
    const client = new ArgoCDClient(context.kubeConfig, fieldManager);
    const base = { client, server: context.server };
    const raw = await client.application(config.applier);
    if (!raw) {
      const message = `Application ${keyOf(config.applier)} does not exist.`;
      return {
        ...base,
        verdict: early ?? { kind: "refused", reason: "ApplierNotFound", message },
        applierMissing: true,
      };
    }
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

  /**
   * The claims in line for the same Application in the same cluster, first first. Argo CD's line
   * has neither the in-flight nor the finalizer rule: a sync somebody started is never replaced,
   * so the oldest eligible claim holds it.
   */
  private line(application: NamespacedName, server: string) {
    const same = this.informers.claims.list().filter((c) => {
      const context = this.sourceContexts.get(keyOf(refOf(c.spec.kubeProviderRef, c.metadata.namespace!)));
      return context?.server === server && keyOf(applicationRefOf(c)) === keyOf(application);
    });
    return line(
      same.map((c) => ({
        claim: { namespace: c.metadata.namespace!, name: c.metadata.name! },
        creationTimestamp: new Date(c.metadata.creationTimestamp ?? 0).toISOString(),
        operationInFlight: false,
        holdsFinalizer: false,
        eligible: ["Succeeded", "HeldByAnotherClaim"].includes(
          c.status?.conditions?.find((x) => x.type === "Configured")?.reason ?? "",
        ),
      })),
    );
  }

  /** Carries the decision's step out; returns the claim as stored, or undefined once it is gone. */
  private async act(
    claim: ArgoCDClaim,
    reading: Reading,
    decision: ArgoCDClaimDecision,
  ): Promise<ArgoCDClaim | undefined> {
    const client = argoCDClaims(this.manager.kubeConfig);
    const { step } = decision;
    const app = reading.application;
    let stored: ArgoCDClaim | undefined = claim;
    if (step.kind === "addFinalizer") stored = await ensureFinalizer(client, claim, argoCDClaimFinalizer);
    if (step.kind === "switchOff" && app) await reading.client!.switchOff(app);
    if (step.kind === "giveUp" && app) await reading.client!.giveUp(app);
    if (step.kind === "leaveOff" && app) await reading.client!.leaveOff(app);
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
      if (!claim.metadata.deletionTimestamp) await this.writeStatus(claim, reading, decision);
      await unlessNotFound(client.jsonPatch(claim, removeFinalizerPatch(claim, argoCDClaimFinalizer)));
      stored = undefined;
    }
    return stored;
  }

  private async writeStatus(
    claim: ArgoCDClaim,
    reading: Reading,
    decision: ArgoCDClaimDecision,
  ): Promise<void> {
    await this.status.write(
      argoCDClaims(this.manager.kubeConfig),
      claim,
      {
        conditions: decision.conditions,
        fields: claimStatusFields(claim.status ?? {}, decision, reading.source),
      },
      true,
    );
  }
}

export function setupArgoCDClaimController(
  manager: Manager,
  sourceContexts: SourceContexts,
  following: Following,
): Controller {
  const kc = manager.kubeConfig;
  const events = new EventRecorder(kc, hostname(), manager.logger);
  const informers: Informers = {
    claims: manager.informer<ArgoCDClaim>(informerSource(kc, resourceTypes.ArgoCDClaim)),
    ...claimInformers(manager),
  };
  const controller = watchClaimInputs(
    new Controller(
      "argocdclaim",
      new ArgoCDClaimReconciler(manager, informers, sourceContexts, events, following),
      manager.logger,
    ).for(informers.claims, generationChanged),
    informers,
    informers.claims,
    "ArgoCDClaim",
  );
  manager.addController(controller);
  return controller;
}
