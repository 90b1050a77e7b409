// The one core both paths serve a CommitRequest through: the control cluster's reconciler and
// each source cluster's watch. It takes one step at a time (decide.ts), each decided again from
// the object as it is stored, and every status write is conditional on the resourceVersion it
// was decided from: a conflict is decided again from the fresh object, and a decided outcome is
// re-applied onto it, never restarted.
import type { CommitRequest, GitTarget, KubeProvider } from "../../generated/v1alpha3/index.ts";
import type { ResourceClient } from "../kube/resourceclient.ts";
import { auditRouteOf, providerKey } from "../kubeprovider/decide.ts";
import type { Condition, ConditionUpdate } from "../operator/conditions.ts";
import type { Logger } from "../telemetry/logger.ts";
import { StatusWriter } from "../operator/status.ts";
import { keyOf, type NamespacedName } from "../types/names.ts";
import type { Actor } from "../attribution/fact.ts";
import { admitsCommitRequest } from "./admission.ts";
import { decideStep, deleteAfterAnnotation, resendIntervalMs, saveRequestOf, type Step } from "./decide.ts";
import type { Report, SaveRequest, WithdrawAnswer } from "./desk.ts";
import { outcomeConditions, phaseConditions, type Outcome } from "./outcome.ts";

/** Which path serves: the control cluster, or one KubeProvider's source cluster. */
export type Path = { cluster: "control" } | { cluster: "source"; provider: string; deletesFinished: boolean };

/** Where each request's attach went, and what its worker says (the branch workers' SaveRoutes). */
export interface Saves {
  attach(targetKey: string, request: SaveRequest): boolean;
  report(id: string): Report | undefined;
  withdraw(id: string, targetKey: string, message: string): Promise<WithdrawAnswer | undefined>;
  forget(id: string): void;
}

export interface CoreDeps {
  targets: (ref: NamespacedName) => GitTarget | undefined;
  providers: (ref: NamespacedName) => KubeProvider | undefined;
  /** A control-cluster namespace's labels, for consumerNamespaces. */
  namespaceLabels: (namespace: string) => Record<string, string>;
  saves: Saves;
  /** With attribution on: who created a request, on its provider's audit route. */
  creator?: (
    route: string,
    request: NamespacedName & { uid: string },
  ) => Promise<{ actor?: Actor; heard: boolean }>;
  /** How long a finished request is kept before it is deleted. */
  retentionMs: number;
  /** The margin of the safety window past attachTimeout + maxDuration: 120 s unless a test shortens it. */
  withdrawMarginMs?: number;
  /** Called once per request that finished, with its outcome: the metric, and its Event. */
  onFinished?: (outcome: Outcome, request: CommitRequest, path: Path) => void;
  fieldManager: string;
  logger: Logger;
  now?: () => Date;
}

export class CommitRequestCore {
  private readonly status: StatusWriter;
  private readonly now: () => Date;

  constructor(private readonly deps: CoreDeps) {
    this.now = deps.now ?? (() => new Date());
    this.status = new StatusWriter(deps.fieldManager, this.now);
  }

  /** Serves one request as stored: one step, and when to look again. */
  async serve(
    client: ResourceClient<CommitRequest>,
    request: CommitRequest,
    path: Path,
  ): Promise<{ requeueAfterMs?: number }> {
    const ref = targetRefOf(request, path);
    const target = ref && this.deps.targets(ref);
    const provider = target && this.deps.providers(providerRefOf(target));
    const step = decideStep(request, {
      now: this.now().getTime(),
      owner: target !== undefined && owns(path, provider),
      targetFound: target !== undefined,
      deletesFinished: path.cluster === "control" || path.deletesFinished,
      report: this.deps.saves.report(request.metadata.uid ?? ""),
      retentionMs: this.deps.retentionMs,
      withdrawMarginMs: this.deps.withdrawMarginMs,
    });
    return this.act(step, client, request, { path, ref, target, provider });
  }

  private async act(step: Step, client: ResourceClient<CommitRequest>, request: CommitRequest, facts: Facts) {
    const targetKey = facts.ref ? keyOf(facts.ref) : "";
    switch (step.kind) {
      case "wait":
        return step.afterMs !== undefined ? { requeueAfterMs: step.afterMs } : {};
      case "targetNotFound":
        await this.finish(client, request, facts.path, {
          reason: "GitTargetNotFound",
          message: notFound(request, facts),
        });
        return {};
      case "claim":
        return this.claim(client, request, facts);
      case "finish":
        await this.finish(client, request, facts.path, step.outcome);
        return {};
      case "withdraw":
        return this.withdraw(client, request, facts.path, targetKey);
      case "progress": {
        const save = saveRequestOf(request, targetKey, request.status?.author || undefined);
        const attached = this.deps.saves.attach(targetKey, save);
        const message = attached ? step.message : `GitTarget ${targetKey} has no branch worker yet.`;
        await this.write(client, request, phaseConditions(step.phase, request.metadata.generation, message));
        return { requeueAfterMs: resendIntervalMs };
      }
      case "stamp":
        await client.jsonPatch(request, stampPatch(request, step.deleteAfter));
        return { requeueAfterMs: step.deleteAfter.getTime() - this.now().getTime() };
      case "delete":
        await client.delete(request.metadata.namespace, request.metadata.name!);
        return {};
    }
  }

  /**
   * Admission and the author, then the first status (status.author, Ready=Unknown Saving), and
   * only then the attach.
   */
  private async claim(client: ResourceClient<CommitRequest>, request: CommitRequest, facts: Facts) {
    const { path, target, provider } = facts;
    const namespace = request.metadata.namespace ?? "";
    const origin =
      path.cluster === "control"
        ? { cluster: "control" as const, namespace, labels: this.deps.namespaceLabels(namespace) }
        : { cluster: "source" as const, namespace };
    if (!admitsCommitRequest(target!, origin)) {
      await this.finish(client, request, path, {
        reason: "NotAdmitted",
        message: notAdmitted(target!, origin.cluster),
      });
      return {};
    }
    const author = await this.author(request, provider);
    if ("unresolved" in author) {
      await this.finish(client, request, path, { reason: "AuthorUnresolved", message: author.unresolved });
      return {};
    }
    const claim = {
      ...request,
      status: { ...request.status, ...(author.username ? { author: author.username } : {}) },
    };
    const conditions = [...phaseConditions("Saving", request.metadata.generation), author.condition];
    await this.write(client, claim, conditions);
    this.deps.saves.attach(keyOf(facts.ref!), saveRequestOf(request, keyOf(facts.ref!), author.username));
    return { requeueAfterMs: resendIntervalMs };
  }

  /** The request's author, from the fact of the create that made it. */
  private async author(
    request: CommitRequest,
    provider: KubeProvider | undefined,
  ): Promise<{ username?: string; condition: ConditionUpdate } | { unresolved: string }> {
    const condition = (status: "True" | "False", reason: string, message: string) => ({
      type: "AuthorAttributed",
      status,
      reason,
      message,
      observedGeneration: request.metadata.generation,
    });
    if (!this.deps.creator || !provider)
      return {
        condition: condition(
          "False",
          "AuthorCaptureDisabled",
          "Attribution is off: the request names no actor.",
        ),
      };
    const route = auditRouteOf(provider);
    const { namespace = "", name = "", uid = "" } = request.metadata;
    const { actor, heard } = await this.deps.creator(route, { namespace, name, uid });
    if (actor) {
      const message = `The audit event that created it names ${actor.username}.`;
      return { username: actor.username, condition: condition("True", "AttributedFromAudit", message) };
    }
    if (heard) {
      return {
        unresolved: `No audit fact on route ${route} names who created this request, so it may not save anybody's window. Check that the audit policy records the writes that create commitrequests.configbutler.ai at level RequestResponse, whose response names the new object's uid.`,
      };
    }
    const message = `No audit fact has arrived on route ${route} yet: the request names no actor.`;
    return { condition: condition("False", "CommitterFallback", message) };
  }

  /**
   * Withdraws a request no worker holds, past its safety window: it fails once the worker that
   * accepted its attach (or, if none did, its GitTarget's) confirms it will never act on it.
   */
  private async withdraw(
    client: ResourceClient<CommitRequest>,
    request: CommitRequest,
    path: Path,
    targetKey: string,
  ) {
    const uid = request.metadata.uid ?? "";
    const message = `The request was not saved within attachTimeout + maxDuration + 120s of its creation, and no worker holds it.`;
    const answer = await this.deps.saves.withdraw(uid, targetKey, message);
    if (answer === "held" || answer === "finished") return { requeueAfterMs: 0 };
    const why =
      answer === undefined
        ? `${message} GitTarget ${targetKey || "(none)"} never started a branch worker that could commit it.`
        : message;
    await this.finish(client, request, path, { reason: "FinalizeFailed", message: why });
    return {};
  }

  /** Writes a finished request's outcome, counts it, and lets its worker forget it. */
  private async finish(
    client: ResourceClient<CommitRequest>,
    request: CommitRequest,
    path: Path,
    outcome: Outcome,
  ) {
    const fields =
      "commit" in outcome && outcome.commit ? { commit: outcome.commit, branch: outcome.branch } : {};
    const done = { ...request, status: { ...request.status, ...fields } };
    await this.write(client, done, outcomeConditions(outcome, request.metadata.generation));
    this.deps.onFinished?.(outcome, request, path);
    this.deps.saves.forget(request.metadata.uid ?? "");
    this.deps.logger.info("CommitRequest finished", {
      commitRequest: keyOf(request.metadata),
      outcome: outcome.reason,
    });
  }

  /**
   * Writes conditions onto what the status already owns: status.author, the commit, and
   * AuthorAttributed stay, since an apply that left them out would remove them.
   */
  private async write(
    client: ResourceClient<CommitRequest>,
    request: CommitRequest,
    conditions: ConditionUpdate[],
  ) {
    const kept = (request.status?.conditions ?? []).filter(
      (c: Condition) => c.type === "AuthorAttributed" && !conditions.some((u) => u.type === c.type),
    );
    const { author, commit, branch } = request.status ?? {};
    const fields = { ...(author ? { author } : {}), ...(commit ? { commit, branch } : {}) };
    await this.status.write(client, request, { conditions: [...conditions, ...kept], fields }, true);
  }
}

interface Facts {
  path: Path;
  ref: NamespacedName | undefined;
  target: GitTarget | undefined;
  provider: KubeProvider | undefined;
}

/** The GitTarget a request names: in its own namespace on the control cluster; named in full on a source cluster. */
function targetRefOf(request: CommitRequest, path: Path): NamespacedName | undefined {
  const { name, namespace } = request.spec.gitTargetRef;
  if (namespace) return { namespace, name };
  return path.cluster === "control" ? { namespace: request.metadata.namespace ?? "", name } : undefined;
}

const providerRefOf = (target: GitTarget): NamespacedName => ({
  namespace: target.spec.kubeProviderRef.namespace ?? target.metadata.namespace ?? "",
  name: target.spec.kubeProviderRef.name,
});

/** The GitTarget's KubeProvider alone picks the path: the control cluster for inCluster, its own watch otherwise. */
function owns(path: Path, provider: KubeProvider | undefined): boolean {
  if (path.cluster === "control") return provider === undefined || provider.spec.inCluster !== undefined;
  return provider !== undefined && providerKey(provider) === path.provider;
}

function notFound(request: CommitRequest, facts: Facts): string {
  if (!facts.ref)
    return "spec.gitTargetRef.namespace is required on a source cluster: the GitTarget lives on the control cluster.";
  const ref = request.spec.gitTargetRef;
  return `GitTarget ${keyOf(facts.ref)} does not exist${ref.namespace ? "" : " in this namespace"}: create it, or name another in spec.gitTargetRef.`;
}

function notAdmitted(target: GitTarget, cluster: "control" | "source"): string {
  const field = cluster === "control" ? "consumerNamespaces" : "sourceNamespaces";
  return `GitTarget ${keyOf(target.metadata)} does not admit CommitRequests from this namespace: add it to a grant's ${field} in spec.allowedCommitRequests.`;
}

/** Stamps delete-after, conditional on the version the request finished at. */
function stampPatch(request: CommitRequest, at: Date): object[] {
  const value = at.toISOString().replace(/\.\d{3}Z$/, "Z");
  const rv = { op: "test", path: "/metadata/resourceVersion", value: request.metadata.resourceVersion };
  if (request.metadata.annotations)
    return [
      rv,
      { op: "add", path: `/metadata/annotations/${deleteAfterAnnotation.replace("/", "~1")}`, value },
    ];
  return [rv, { op: "add", path: "/metadata/annotations", value: { [deleteAfterAnnotation]: value } }];
}
