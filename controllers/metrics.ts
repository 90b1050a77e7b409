// The gauges read at scrape time: what a scrape reads is the state now, never the last moment a
// work loop reported it, so a stuck loop cannot look healthy. Each reads the process's own
// structures: the informer caches of our kinds, the watch plane, and the branch workers.
import type { KubernetesObject } from "@kubernetes/client-node";
import { resourceTypes } from "../generated/v1alpha3/index.ts";
import type { Condition } from "../internal/operator/conditions.ts";
import type { Manager } from "../internal/operator/manager.ts";
import { informerSource } from "../internal/kube/sources.ts";
import type { BranchState, WorkerManager } from "../internal/git/index.ts";
import type { SourceContexts } from "../internal/watch/sourcecontexts.ts";
import {
  applyOperationsUnresolved,
  gitBranchTargets,
  intakePaused,
  nextRetry,
  readAtScrape,
  retainedBytes,
  retainedWrites,
  resourceCondition,
  watchOpenStreams,
  watchResolvedTypes,
} from "../internal/telemetry/instruments.ts";
import { parseKey } from "../internal/types/names.ts";

/** The kstatus trio every configuration object reports. */
const kstatus = new Set(["Ready", "Reconciling", "Stalled"]);

/** The kinds a person declares; a CommitRequest is a request, counted by commit_requests_total. */
const declaredKinds = [
  resourceTypes.GitProvider,
  resourceTypes.GitBranch,
  resourceTypes.GitTarget,
  resourceTypes.WatchRule,
  resourceTypes.ClusterWatchRule,
  resourceTypes.KubeProvider,
  resourceTypes.GitReceiver,
  resourceTypes.FluxClaim,
  resourceTypes.ArgoCDClaim,
  resourceTypes.WebhookClaim,
];

type Sample = [Record<string, string>, number];

/** A claim's apply operation past its budget and still followed: what its status.operation says. */
export function unresolvedSample(
  kind: string,
  claim: KubernetesObject & { status?: { operation?: { phase?: string } } },
): Sample {
  const { namespace = "", name = "" } = claim.metadata ?? {};
  return [
    { claim_kind: kind, claim_namespace: namespace, claim_name: name },
    claim.status?.operation?.phase === "Unresolved" ? 1 : 0,
  ];
}

/** resource_condition's samples for one object: 1 on the status each trio condition holds. */
export function conditionSamples(
  kind: string,
  object: KubernetesObject & { status?: { conditions?: Condition[] } },
): Sample[] {
  const { namespace = "", name = "" } = object.metadata ?? {};
  return (object.status?.conditions ?? [])
    .filter((c) => kstatus.has(c.type))
    .map((c) => [
      {
        resource_kind: kind,
        resource_namespace: namespace,
        resource_name: name,
        condition: c.type,
        status: c.status,
        reason: c.reason ?? "",
      },
      1,
    ]);
}

export function setupScrapeGauges(manager: Manager, sources: SourceContexts, workers: WorkerManager): void {
  const informers = declaredKinds.map((type) => ({
    kind: type.kind,
    informer: manager.informer(informerSource(manager.kubeConfig, type)),
  }));
  const claims = informers.filter(({ kind }) => kind.endsWith("Claim"));
  readAtScrape(applyOperationsUnresolved, () =>
    claims.flatMap(({ kind, informer }) => informer.list().map((claim) => unresolvedSample(kind, claim))),
  );
  readAtScrape(resourceCondition, () =>
    informers.flatMap(({ kind, informer }) =>
      informer.list().flatMap((object) => conditionSamples(kind, object)),
    ),
  );
  readAtScrape(gitBranchTargets, function* () {
    for (const { branchKey, targetKey } of workers.branchTargets()) {
      const branch = parseKey(branchKey);
      const target = parseKey(targetKey);
      yield [
        {
          gitbranch_namespace: branch.namespace,
          gitbranch_name: branch.name,
          gittarget_namespace: target.namespace,
          gittarget_name: target.name,
        },
        1,
      ];
    }
  });
  const branchGauge = (read: (state: BranchState) => number) =>
    function* (): Generator<Sample> {
      for (const [key, state] of workers.branches()) {
        const { namespace, name } = parseKey(key);
        yield [{ gitbranch_namespace: namespace, gitbranch_name: name }, read(state)];
      }
    };
  readAtScrape(
    retainedWrites,
    branchGauge((s) => s.retainedWrites),
  );
  readAtScrape(
    retainedBytes,
    branchGauge((s) => s.retainedBytes),
  );
  readAtScrape(
    intakePaused,
    branchGauge((s) => (s.intakePaused ? 1 : 0)),
  );
  readAtScrape(
    nextRetry,
    branchGauge((s) => (s.outage ? s.outage.nextAttemptAt / 1000 : 0)),
  );
  readAtScrape(watchOpenStreams, function* () {
    for (const { target, summary } of sources.streamStates()) {
      const labels = { gittarget_namespace: target.namespace, gittarget_name: target.name };
      yield [{ ...labels, state: "Replaying" }, summary.replaying];
      yield [{ ...labels, state: "Running" }, summary.running];
      yield [{ ...labels, state: "Blocked" }, summary.blocked];
    }
  });
  readAtScrape(watchResolvedTypes, function* () {
    for (const { target, plan } of sources.streamStates()) {
      if (!plan) continue;
      const labels = { gittarget_namespace: target.namespace, gittarget_name: target.name };
      yield [{ ...labels, resolution: "resolved" }, plan.collections.length];
      yield [{ ...labels, resolution: "unresolved" }, plan.unresolved.length];
    }
  });
}
