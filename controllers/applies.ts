// How the branch workers' applies are carried out in this process: a FluxClaim's attempt by the
// Flux dispatcher, through the claim's KubeProvider, with the Events and metrics the seeds name.
// The first failure of a run is an Event; the retries the worker decides after it are not, until
// an attempt succeeds again.
import { hostname } from "node:os";
import { fluxClaims, gitTargets, resourceTypes, type FluxClaim } from "../generated/v1alpha3/index.ts";
import { FluxDispatcher, type DispatchReport } from "../internal/applier/fluxdispatch.ts";
import { holdsApplier } from "../internal/applier/fluxclaim.ts";
import type { ProcessApplies } from "../internal/git/index.ts";
import type { Following } from "../internal/applier/following.ts";
import { informerSource } from "../internal/kube/sources.ts";
import { statusCodeOf } from "../internal/kube/resourceclient.ts";
import { EventRecorder } from "../internal/operator/events.ts";
import type { Manager } from "../internal/operator/manager.ts";
import {
  applyDuration,
  applyEchoes,
  applyWindowCollisions,
  applyOperationsUnresolved,
  applyRequests,
  applyRevisionMismatches,
} from "../internal/telemetry/instruments.ts";
import { keyOf, refOf } from "../internal/types/names.ts";
import type { SourceContexts } from "../internal/watch/sourcecontexts.ts";
import { fieldManager } from "./fieldmanager.ts";

/** The field manager status.operation is written under, apart from the claim reconciler's own. */
export const operationFieldManager = `${fieldManager}-applies`;
/** The field manager status.repairPending is written under: its own, so neither write drops the other's field. */
export const repairFieldManager = `${fieldManager}-repairs`;

const failureEvents: Partial<Record<DispatchReport["ended"], string>> = {
  Failed: "ApplyFailed",
  RequestFailed: "ApplyRequestFailed",
  Rejected: "ApplyRequestFailed",
};

const labelsOf = (claim: FluxClaim) => ({
  claim_kind: "FluxClaim",
  claim_namespace: claim.metadata.namespace ?? "",
  claim_name: claim.metadata.name ?? "",
});

export function setupApplies(
  manager: Manager,
  sourceContexts: SourceContexts,
  following: Following,
): ProcessApplies {
  const kc = manager.kubeConfig;
  const events = new EventRecorder(kc, hostname(), manager.logger);
  const claimInformer = manager.informer<FluxClaim>(informerSource(kc, resourceTypes.FluxClaim));
  /** Claims whose last attempt failed: the next failure records no Event. */
  const failing = new Set<string>();
  const record = (claim: FluxClaim, type: "Normal" | "Warning", reason: string, note: string) =>
    events.record(claim, type, reason, "Apply", note).catch(() => undefined);
  const ended = (report: DispatchReport) => {
    const { claim } = report;
    const labels = labelsOf(claim);
    const key = keyOf(claim.metadata);
    applyRequests.inc({ ...labels, reason: report.reason ?? "", outcome: report.ended });
    if (report.durationMs !== undefined)
      applyDuration.observe({ ...labels, outcome: report.ended }, report.durationMs / 1000);
    if (report.mismatch) applyRevisionMismatches.inc(labels);
    applyOperationsUnresolved.set(labels, 0);
    const log = report.ended === "Succeeded" || report.ended === "Stale" || report.ended === "Dropped";
    manager.logger[log ? "info" : "error"]("an apply attempt ended", {
      claim: key,
      commit: report.commit,
      reason: report.reason,
      ended: report.ended,
      message: report.message,
      ...(report.recovered ? { recovered: true } : {}),
    });
    const event = failureEvents[report.ended];
    if (report.ended === "Succeeded") failing.delete(key);
    if (!event || failing.has(key)) return;
    failing.add(key);
    void record(
      claim,
      "Warning",
      event,
      `The apply of ${report.commit} ended ${report.ended}: ${report.message}`,
    );
  };
  const dispatcher = new FluxDispatcher({
    claims: fluxClaims(kc),
    targets: gitTargets(kc),
    clusterOf: (claim) =>
      sourceContexts.get(keyOf(refOf(claim.spec.kubeProviderRef, claim.metadata.namespace!)))?.kubeConfig,
    fieldManager,
    operationManager: operationFieldManager,
    following,
    onEnded: ended,
    onRequested: (claim, operation) =>
      void record(
        claim,
        "Normal",
        "ApplyRequested",
        `Applying ${operation.commit} (${operation.reason ?? "CatchUp"}) with token ${operation.requestToken}.`,
      ),
    onUnresolved: (claim, operation) => {
      applyOperationsUnresolved.set(labelsOf(claim), 1);
      void record(
        claim,
        "Warning",
        "ApplyUnresolved",
        `The apply of ${operation.commit} ran past its 5-minute budget: the Kustomization is suspended again, and the apply is still followed.`,
      );
    },
  });
  manager.addRunnable(dispatcher);
  const claimsClient = fluxClaims(kc);
  /** status.repairPending onto the claim's version; a conflict reads it again, three times. */
  const writeRepairPending = async (ref: { namespace: string; name: string }, pending: boolean) => {
    for (let attempt = 1; attempt <= 3; attempt++) {
      const claim = await claimsClient.get(ref.namespace, ref.name).catch(() => undefined);
      if (!claim || claim.metadata.deletionTimestamp) return;
      const { namespace, name, resourceVersion } = claim.metadata;
      try {
        await claimsClient.applyStatus(
          { metadata: { namespace, name, resourceVersion }, status: { repairPending: pending } } as FluxClaim,
          repairFieldManager,
        );
        return;
      } catch (err) {
        if (statusCodeOf(err) !== 409 || attempt === 3)
          manager.logger.error("writing repairPending failed", { claim: keyOf(ref), error: String(err) });
      }
    }
  };
  const claimOf = (ref: { namespace: string; name: string }) => claimInformer.get(ref.name, ref.namespace);
  return {
    dispatch: (branch, attempt, current) => dispatcher.dispatch(branch, attempt, current),
    snapshotsSettled: (target) => sourceContexts.snapshotsSettled(target),
    // A claim still adopting, releasing or refused is asked for nothing: it does not hold its applier.
    holds: (ref) => {
      const claim = claimOf(ref);
      return claim !== undefined && holdsApplier(claim);
    },
    sourceOf: (ref) => {
      const claim = claimOf(ref);
      const source = claim?.status?.source;
      if (!claim || !source?.name) return undefined;
      const provider = keyOf(refOf(claim.spec.kubeProviderRef, claim.metadata.namespace!));
      return `${provider}|${source.namespace}/${source.name}`;
    },
    judged: (ref, verdict, object) => {
      const labels = { claim_kind: "FluxClaim", claim_namespace: ref.namespace, claim_name: ref.name };
      if (verdict === "echo") applyEchoes.inc({ ...labels, outcome: "not_mirrored" });
      if (verdict === "late") applyEchoes.inc({ ...labels, outcome: "late" });
      if (verdict === "withheld" || verdict === "ambiguous") {
        applyWindowCollisions.inc({ ...labels, outcome: verdict });
        manager.logger.info("an apply met a newer edit in its window", {
          claim: keyOf(ref),
          object,
          outcome:
            verdict === "withheld"
              ? "withheld: Git keeps the edit, and a Repair is due"
              : "ambiguous: mirrored",
        });
      }
    },
    repairPendingAtStart: (ref) => claimOf(ref)?.status?.repairPending === true,
    // An operation the last process left in flight, followed to its end before a live write to the claim's folders is judged.
    recover: (ref) => {
      const claim = claimOf(ref);
      return claim && dispatcher.recover(claim);
    },
    repairPending: (ref, pending) => void writeRepairPending(ref, pending),
    lastApplied: (ref) => {
      const operation = claimOf(ref)?.status?.operation;
      return operation?.phase === "Succeeded" ? operation.commit : undefined;
    },
  };
}
