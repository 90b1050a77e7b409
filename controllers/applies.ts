// How the branch workers' applies are carried out in this process: a FluxClaim's attempt by the
// Flux dispatcher, an ArgoCDClaim's by the Argo CD dispatcher, each through the claim's
// KubeProvider, and a WebhookClaim's by the webhook dispatcher, a signed POST to its URL, with
// the Events and metrics the seeds name. The first failure of a run is an
// Event; the retries the worker decides after it are not, until an attempt succeeds again.
import { hostname } from "node:os";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import {
  apiVersion,
  argoCDClaims,
  fluxClaims,
  gitTargets,
  resourceTypes,
  webhookClaims,
  type ApplyOperation,
  type ArgoCDClaim,
  type FluxClaim,
  type WebhookClaim,
} from "../generated/v1alpha3/index.ts";
import {
  ArgoCDDispatcher,
  FluxDispatcher,
  WebhookDispatcher,
  type AnyClaim,
  type DispatchedClaim,
  type DispatchReport,
} from "../internal/applier/dispatch/index.ts";
import {
  holdsApplication,
  holdsApplier,
  holdsWebhook,
  type Following,
} from "../internal/applier/claim/index.ts";
import { judgeCallback, loadWebhookSecret } from "../internal/applier/webhook/index.ts";
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
import { keyOf, refOf, type NamespacedName } from "../internal/types/names.ts";
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
interface Kind<C extends DispatchedClaim> {
  informer: SharedInformer<C>;
  client: ResourceClient<C>;
  /** Whether the claim holds its applier, so it may be asked. */
  holds(claim: C): boolean;
}

/** What ApplyUnresolved says, by kind: Flux and Argo CD are still followed; a webhook's is asked again. */
const unresolvedNotes: Record<ClaimKind, (commit: string) => string> = {
  FluxClaim: (commit) =>
    `The apply of ${commit} ran past its 5-minute budget: the Kustomization is suspended again, and the apply is still followed.`,
  ArgoCDClaim: (commit) => `The sync of ${commit} ran past its 5-minute budget: it is still followed.`,
  WebhookClaim: (commit) =>
    `The apply of ${commit} had no reported end within its budget: it ends Unresolved, and the branch worker asks again.`,
};

/** Each claim kind's informer, client and hold. */
function claimKinds(manager: Manager) {
  const kc = manager.kubeConfig;
  return {
    FluxClaim: {
      informer: manager.informer<FluxClaim>(informerSource(kc, resourceTypes.FluxClaim)),
      client: fluxClaims(kc),
      holds: holdsApplier,
    } satisfies Kind<FluxClaim>,
    ArgoCDClaim: {
      informer: manager.informer<ArgoCDClaim>(informerSource(kc, resourceTypes.ArgoCDClaim)),
      client: argoCDClaims(kc),
      holds: holdsApplication,
    } satisfies Kind<ArgoCDClaim>,
    WebhookClaim: {
      informer: manager.informer<WebhookClaim>(informerSource(kc, resourceTypes.WebhookClaim)),
      client: webhookClaims(kc),
      holds: holdsWebhook,
    } satisfies Kind<WebhookClaim>,
  };
}

export function setupApplies(
  manager: Manager,
  sourceContexts: SourceContexts,
  following: Following,
  options: {
    /** How long an apply may run before it is Unresolved: 5 minutes unless a test shortens it. */
    budgetMs?: number | undefined;
    /** --webhook-claim-allow-loopback-http. */
    allowLoopbackHttp: boolean;
  },
): Applies {
  const kc = manager.kubeConfig;
  const events = new EventRecorder(kc, hostname(), manager.logger);
  const kinds = claimKinds(manager);
  const kindOf = (ref: ClaimRef) => kinds[ref.kind] as Kind<DispatchedClaim>;
  const claimOf = (ref: ClaimRef) => kindOf(ref).informer.get(ref.name, ref.namespace);
  const record = (claim: DispatchedClaim, type: "Normal" | "Warning", reason: string, note: string) =>
    events.record(claim, type, reason, "Apply", note).catch(() => undefined);
  const clusterOf = (claim: AnyClaim): KubeConfig | undefined =>
    sourceContexts.get(keyOf(refOf(claim.spec.kubeProviderRef, claim.metadata.namespace!)))?.kubeConfig;
  const shared = {
    targets: gitTargets(kc),
    clusterOf,
    fieldManager,
    operationManager: operationFieldManager,
    following,
    ...(options.budgetMs !== undefined ? { budgetMs: options.budgetMs } : {}),
  };
  const reports = attemptReports(manager, record);
  const core = kc.makeApiClient(CoreV1Api);
  const dispatchers = {
    FluxClaim: new FluxDispatcher({ ...shared, claims: kinds.FluxClaim.client, ...reports("FluxClaim") }),
    ArgoCDClaim: new ArgoCDDispatcher({
      ...shared,
      claims: kinds.ArgoCDClaim.client,
      ...reports("ArgoCDClaim"),
    }),
    WebhookClaim: new WebhookDispatcher({
      ...shared,
      // A webhook applier lives in no cluster of ours.
      clusterOf: () => undefined,
      claims: kinds.WebhookClaim.client,
      secretOf: (claim) => loadWebhookSecret(core, claim),
      allowLoopbackHttp: options.allowLoopbackHttp,
      ...reports("WebhookClaim"),
    }),
  };
  for (const dispatcher of Object.values(dispatchers)) manager.addRunnable(dispatcher);

  /** A Warning on the GitTarget whose folder holds the objects, and on its claim. */
  const warn = (ref: ClaimRef, target: string, reason: string, note: string) => {
    const [namespace, name] = target.split("/");
    const gitTarget = { apiVersion, kind: "GitTarget", metadata: { namespace, name } };
    void events.record(gitTarget, "Warning", reason, "Mirror", note);
    const claim = claimOf(ref);
    if (claim) void record(claim, "Warning", reason, note);
  };
  const writeRepairPending = repairPendingWriter(manager, (ref) => kindOf(ref).client);
  /** Flux's and Argo CD's field managers, or the ones a WebhookClaim declares. */
  const managersOf = (ref: ClaimRef) => {
    const claim = claimOf(ref);
    return applierManagersOf(
      ref.kind,
      claim?.kind === "WebhookClaim" ? (claim.spec.fieldManagers ?? []) : [],
    );
  };
  return {
    dispatch: (branch, attempt, current) =>
      dispatchers[attempt.claim.kind].dispatch(branch, attempt, current),
    snapshotsSettled: (target) => sourceContexts.snapshotsSettled(target),
    // A claim still adopting, releasing or refused is asked for nothing: it does not hold its applier.
    holds: (ref) => {
      const claim = claimOf(ref);
      return claim !== undefined && kindOf(ref).holds(claim);
    },
    managersOf,
    sourceOf: (ref) => {
      const claim = claimOf(ref);
      // Two webhook claims posting to one URL take turns, as two claims on one source do.
      if (claim?.kind === "WebhookClaim") return `webhook|${claim.spec.url}`;
      const source = claim?.status?.source;
      if (!claim || !source?.name) return undefined;
      const provider = keyOf(refOf(claim.spec.kubeProviderRef, claim.metadata.namespace!));
      return `${provider}|${source.kind}/${source.namespace}/${source.name}`;
    },
    ...windowReports(manager, warn, managersOf),
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
      if (claim.kind === "FluxClaim") return dispatchers.FluxClaim.recover(claim);
      if (claim.kind === "ArgoCDClaim") return dispatchers.ArgoCDClaim.recover(claim);
      return dispatchers.WebhookClaim.recover(claim);
    },
  };
}

type RecordEvent = (
  claim: DispatchedClaim,
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
    // Stopped mid-apply: the next process follows the operation to its end, and says how it ended.
    if (!event || failing.has(key) || report.stopped) return;
    failing.add(key);
    void record(
      report.claim,
      "Warning",
      event,
      `The apply of ${report.commit} ended ${report.ended}: ${report.message}`,
    );
  };
  const refOfClaim = (kind: ClaimKind, claim: DispatchedClaim): ClaimRef => ({
    kind,
    namespace: claim.metadata.namespace ?? "",
    name: claim.metadata.name ?? "",
  });
  return (kind: ClaimKind) => ({
    onEnded: (report: DispatchReport) => ended(refOfClaim(kind, report.claim), report),
    onRequested: (claim: DispatchedClaim, operation: ApplyOperation) =>
      void record(
        claim,
        "Normal",
        "ApplyRequested",
        `Applying ${operation.commit} (${operation.reason ?? "CatchUp"}) with token ${operation.requestToken}.`,
      ),
    onUnresolved: (claim: DispatchedClaim, operation: ApplyOperation) => {
      void record(claim, "Warning", "ApplyUnresolved", unresolvedNotes[kind](operation.commit ?? ""));
    },
  });
}

/** What the apply window tells of the writes it judged, and of snapshots that met a pushed commit: metrics, log and Warnings. */
function windowReports(
  manager: Manager,
  warn: (ref: ClaimRef, target: string, reason: string, note: string) => void,
  managersOf: (ref: ClaimRef) => readonly string[],
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
      const tie = verdict === "ambiguous" ? tieOf(writers ?? [], managersOf(ref)) : undefined;
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
function repairPendingWriter(manager: Manager, clientOf: (ref: ClaimRef) => ResourceClient<DispatchedClaim>) {
  return async (ref: ClaimRef, pending: boolean) => {
    const client = clientOf(ref);
    for (let attempt = 1; attempt <= 3; attempt++) {
      const claim = await client.get(ref.namespace, ref.name).catch(() => undefined);
      if (!claim || claim.metadata.deletionTimestamp) return;
      const { namespace, name, resourceVersion } = claim.metadata;
      try {
        await client.applyStatus(
          {
            metadata: { namespace, name, resourceVersion },
            status: { repairPending: pending },
          } as DispatchedClaim,
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

/**
 * A webhook applier's report of how an apply ended (internal/applier/webhook/callback.ts): judged
 * on the claim read now, uncached, and its Secret, and written to status.operation under the
 * dispatcher's field manager, where the dispatcher following the operation reads it, on whichever
 * replica that is. A write that meets a newer claim is judged again on it, up to three times.
 */
export function webhookCallbacks(manager: Manager) {
  const kc = manager.kubeConfig;
  const claims = webhookClaims(kc);
  const core = kc.makeApiClient(CoreV1Api);
  return async (ref: NamespacedName, body: Buffer, signature: string | undefined) => {
    for (let attempt = 1; ; attempt++) {
      const claim = await claims.get(ref.namespace, ref.name);
      const secret = claim && (await loadWebhookSecret(core, claim));
      const verdict = judgeCallback({ claim, secret, body, signature, now: new Date() });
      if (verdict.kind === "refused") return { status: verdict.status, message: verdict.message };
      const { namespace, name, resourceVersion } = claim!.metadata;
      try {
        await claims.applyStatus(
          {
            metadata: { namespace, name, resourceVersion },
            status: { operation: verdict.operation },
          } as WebhookClaim,
          operationFieldManager,
        );
        return { status: 200, message: `Recorded: the apply ended ${verdict.operation.phase}.` };
      } catch (err) {
        if (statusCodeOf(err) !== 409 || attempt >= 3) throw err;
      }
    }
  };
}
