// How the branch workers' applies are carried out in this process: a FluxClaim's attempt by the
// Flux dispatcher, an ArgoCDClaim's by the Argo CD dispatcher, each through the claim's
// KubeProvider, with the Events and metrics the seeds name. The first failure of a run is an
// Event; the retries the worker decides after it are not, until an attempt succeeds again.
import { hostname } from "node:os";
import type { KubeConfig } from "@kubernetes/client-node";
import {
  apiVersion,
  argoCDClaims,
  fluxClaims,
  gitTargets,
  resourceTypes,
  type ApplyOperation,
  type ArgoCDClaim,
  type FluxClaim,
} from "../generated/v1alpha3/index.ts";
import {
  ArgoCDDispatcher,
  FluxDispatcher,
  type AnyClaim,
  type DispatchReport,
} from "../internal/applier/dispatch/index.ts";
import { holdsApplication, holdsApplier, type Following } from "../internal/applier/claim/index.ts";
import type { Applies } from "../internal/git/index.ts";
import { statusCodeOf, type ResourceClient } from "../internal/kube/resourceclient.ts";
import { informerSource } from "../internal/kube/sources.ts";
import { EventRecorder } from "../internal/operator/events.ts";
import type { SharedInformer } from "../internal/operator/informer.ts";
import type { Manager } from "../internal/operator/manager.ts";
import { applierManagersOf, tieNote, tieOf } from "../internal/applier/decide/index.ts";
import { overrideNote } from "../internal/git/index.ts";
import {
  applyDuration,
  applyEchoes,
  applyWindowCollisions,
  applyRequests,
  applyRevisionMismatches,
  pushedChangesOverridden,
  staleSnapshots,
} from "../internal/telemetry/instruments.ts";
import { claimKey, type ClaimKind, type ClaimRef } from "../internal/types/claims.ts";
import { keyOf, refOf } from "../internal/types/names.ts";
import type { SourceContexts } from "../internal/watch/sourcecontexts.ts";
import { fieldManager } from "../internal/operator/fieldmanager.ts";
import { errorText } from "../internal/telemetry/errortext.ts";

/** The field manager status.operation is written under, apart from the claim reconciler's own. */
export const operationFieldManager = `${fieldManager}-applies`;
/** The field manager status.repairPending is written under: its own, so neither write drops the other's field. */
export const repairFieldManager = `${fieldManager}-repairs`;

const failureEvents: Partial<Record<DispatchReport["ended"], string>> = {
  Failed: "ApplyFailed",
  RequestFailed: "ApplyRequestFailed",
  Rejected: "ApplyRequestFailed",
};

/** The Warning a tie mirrored with no previous event to tell the writer gives (docs/flux.md). */
export const tieReason = "AmbiguousWriteMirrored";

/** The Warning a first snapshot gives where it wrote live values over pushed changes (docs/flux.md). */
export const overrideReason = "PushedChangeOverridden";

const labelsOf = (ref: ClaimRef) => ({
  claim_kind: ref.kind,
  claim_namespace: ref.namespace,
  claim_name: ref.name,
});

/** What this process reads and writes of one claim kind. */
interface Kind<C extends AnyClaim> {
  informer: SharedInformer<C>;
  client: ResourceClient<C>;
  /** Whether the claim holds its applier, so it may be asked. */
  holds(claim: C): boolean;
}

export function setupApplies(
  manager: Manager,
  sourceContexts: SourceContexts,
  following: Following,
  /** How long an apply may run before it is Unresolved: 5 minutes unless a test shortens it. */
  budgetMs?: number,
): Applies {
  const kc = manager.kubeConfig;
  const events = new EventRecorder(kc, hostname(), manager.logger);
  const kinds: { FluxClaim: Kind<FluxClaim>; ArgoCDClaim: Kind<ArgoCDClaim> } = {
    FluxClaim: {
      informer: manager.informer<FluxClaim>(informerSource(kc, resourceTypes.FluxClaim)),
      client: fluxClaims(kc),
      holds: holdsApplier,
    },
    ArgoCDClaim: {
      informer: manager.informer<ArgoCDClaim>(informerSource(kc, resourceTypes.ArgoCDClaim)),
      client: argoCDClaims(kc),
      holds: holdsApplication,
    },
  };
  const kindOf = (ref: ClaimRef) => kinds[ref.kind] as Kind<AnyClaim>;
  const claimOf = (ref: ClaimRef) => kindOf(ref).informer.get(ref.name, ref.namespace);
  const record = (claim: AnyClaim, type: "Normal" | "Warning", reason: string, note: string) =>
    events.record(claim, type, reason, "Apply", note).catch(() => undefined);
  const clusterOf = (claim: AnyClaim): KubeConfig | undefined =>
    sourceContexts.get(keyOf(refOf(claim.spec.kubeProviderRef, claim.metadata.namespace!)))?.kubeConfig;
  const shared = {
    targets: gitTargets(kc),
    clusterOf,
    fieldManager,
    operationManager: operationFieldManager,
    following,
    ...(budgetMs !== undefined ? { budgetMs } : {}),
  };
  const reports = attemptReports(manager, record);
  const flux = new FluxDispatcher({ ...shared, claims: kinds.FluxClaim.client, ...reports("FluxClaim") });
  const argo = new ArgoCDDispatcher({
    ...shared,
    claims: kinds.ArgoCDClaim.client,
    ...reports("ArgoCDClaim"),
  });
  manager.addRunnable(flux);
  manager.addRunnable(argo);

  /** A Warning on the GitTarget whose folder holds the objects, and on its claim. */
  const warn = (ref: ClaimRef, target: string, reason: string, note: string) => {
    const [namespace, name] = target.split("/");
    const gitTarget = { apiVersion, kind: "GitTarget", metadata: { namespace, name } };
    void events.record(gitTarget, "Warning", reason, "Mirror", note);
    const claim = claimOf(ref);
    if (claim) void record(claim, "Warning", reason, note);
  };
  const writeRepairPending = repairPendingWriter(manager, (ref) => kindOf(ref).client);
  return {
    dispatch: (branch, attempt, current) =>
      attempt.claim.kind === "FluxClaim"
        ? flux.dispatch(branch, attempt, current)
        : argo.dispatch(branch, attempt, current),
    snapshotsSettled: (target) => sourceContexts.snapshotsSettled(target),
    // A claim still adopting, releasing or refused is asked for nothing: it does not hold its applier.
    holds: (ref) => {
      const claim = claimOf(ref);
      return claim !== undefined && kindOf(ref).holds(claim);
    },
    sourceOf: (ref) => {
      const claim = claimOf(ref);
      const source = claim?.status?.source;
      if (!claim || !source?.name) return undefined;
      const provider = keyOf(refOf(claim.spec.kubeProviderRef, claim.metadata.namespace!));
      return `${provider}|${source.kind}/${source.namespace}/${source.name}`;
    },
    ...windowReports(manager, warn),
    repairPendingAtStart: (ref) => claimOf(ref)?.status?.repairPending === true,
    repairPending: (ref, pending) => void writeRepairPending(ref, pending),
    lastApplied: (ref) => {
      const operation = claimOf(ref)?.status?.operation;
      return operation?.phase === "Succeeded" ? operation.commit : undefined;
    },
    // An operation the last process left in flight, followed to its end before a live write to the claim's folders is judged.
    recover: (ref) => {
      const claim = claimOf(ref);
      if (!claim) return undefined;
      return ref.kind === "FluxClaim" ? flux.recover(claim as FluxClaim) : argo.recover(claim as ArgoCDClaim);
    },
  };
}

type RecordEvent = (
  claim: AnyClaim,
  type: "Normal" | "Warning",
  reason: string,
  note: string,
) => Promise<unknown>;

/**
 * What a dispatcher reports of its attempts, for one claim kind: the ApplyRequested and
 * ApplyUnresolved Events, and an attempt's end in the metrics, the log, and (the first failure of
 * a run only) a Warning.
 */
function attemptReports(manager: Manager, record: RecordEvent) {
  /** Claims whose last attempt failed: the next failure records no Event. */
  const failing = new Set<string>();
  const ended = (ref: ClaimRef, report: DispatchReport) => {
    const labels = labelsOf(ref);
    const key = claimKey(ref);
    applyRequests.inc({ ...labels, reason: report.reason ?? "", outcome: report.ended });
    if (report.durationMs !== undefined)
      applyDuration.observe({ ...labels, outcome: report.ended }, report.durationMs / 1000);
    if (report.mismatch) applyRevisionMismatches.inc(labels);
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
      report.claim,
      "Warning",
      event,
      `The apply of ${report.commit} ended ${report.ended}: ${report.message}`,
    );
  };
  const refOfClaim = (kind: ClaimKind, claim: AnyClaim): ClaimRef => ({
    kind,
    namespace: claim.metadata.namespace ?? "",
    name: claim.metadata.name ?? "",
  });
  return (kind: ClaimKind) => ({
    onEnded: (report: DispatchReport) => ended(refOfClaim(kind, report.claim), report),
    onRequested: (claim: AnyClaim, operation: ApplyOperation) =>
      void record(
        claim,
        "Normal",
        "ApplyRequested",
        `Applying ${operation.commit} (${operation.reason ?? "CatchUp"}) with token ${operation.requestToken}.`,
      ),
    onUnresolved: (claim: AnyClaim, operation: ApplyOperation) => {
      void record(
        claim,
        "Warning",
        "ApplyUnresolved",
        kind === "FluxClaim"
          ? `The apply of ${operation.commit} ran past its 5-minute budget: the Kustomization is suspended again, and the apply is still followed.`
          : `The sync of ${operation.commit} ran past its 5-minute budget: it is still followed.`,
      );
    },
  });
}

/** What the apply window tells of the writes it judged, and of snapshots that met a pushed commit: metrics, log and Warnings. */
function windowReports(
  manager: Manager,
  warn: (ref: ClaimRef, target: string, reason: string, note: string) => void,
): Pick<Applies, "judged" | "pushedChangeOverridden" | "staleSnapshot"> {
  return {
    judged: (ref, verdict, { target, object, writers }) => {
      const labels = labelsOf(ref);
      if (verdict === "echo") applyEchoes.inc({ ...labels, outcome: "not_mirrored" });
      if (verdict === "late") applyEchoes.inc({ ...labels, outcome: "late" });
      if (verdict === "withheld" || verdict === "ambiguous") {
        applyWindowCollisions.inc({ ...labels, outcome: verdict });
        manager.logger.info("an apply met a newer edit in its window", {
          claim: claimKey(ref),
          object,
          outcome:
            verdict === "withheld"
              ? "withheld: Git keeps the edit, and a Repair is due"
              : "ambiguous: mirrored",
        });
      }
      // The tie rule mirrored what may be the applier's write over a live value: the user is told.
      const tie = verdict === "ambiguous" ? tieOf(writers ?? [], applierManagersOf(ref.kind)) : undefined;
      if (tie) warn(ref, target, tieReason, tieNote(object, tie));
    },
    pushedChangeOverridden: (ref, { target, commit, objects }) => {
      pushedChangesOverridden.inc(labelsOf(ref), objects.length);
      const note = overrideNote(objects, commit);
      manager.logger.warn("a first snapshot wrote live values over pushed changes", {
        claim: claimKey(ref),
        target,
        commit,
      });
      warn(ref, target, overrideReason, note);
    },
    staleSnapshot: (target, outcome) => {
      staleSnapshots.inc({ outcome, gittarget_namespace: target.namespace, gittarget_name: target.name });
      if (outcome === "used")
        manager.logger.warn(
          "a snapshot held 5 minutes while Git is ahead is used: the API wins over what the unapplied commit changed",
          {
            target: keyOf(target),
          },
        );
    },
  };
}

/** status.repairPending onto the claim's version; a conflict reads it again, three times. */
function repairPendingWriter(manager: Manager, clientOf: (ref: ClaimRef) => ResourceClient<AnyClaim>) {
  return async (ref: ClaimRef, pending: boolean) => {
    const client = clientOf(ref);
    for (let attempt = 1; attempt <= 3; attempt++) {
      const claim = await client.get(ref.namespace, ref.name).catch(() => undefined);
      if (!claim || claim.metadata.deletionTimestamp) return;
      const { namespace, name, resourceVersion } = claim.metadata;
      try {
        await client.applyStatus(
          { metadata: { namespace, name, resourceVersion }, status: { repairPending: pending } } as AnyClaim,
          repairFieldManager,
        );
        return;
      } catch (err) {
        if (statusCodeOf(err) !== 409 || attempt === 3)
          manager.logger.error("writing repairPending failed", {
            claim: claimKey(ref),
            error: errorText(err),
          });
      }
    }
  };
}
