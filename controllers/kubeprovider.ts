// KubeProvider: decides whether the connection may be used at all (the installation's consent
// for inCluster, the kubeconfig Secret's safety checks), proves the cluster answers, and keeps
// the provider's source context in line, its client throttled and bounded as spec.client says.
// The Secret is read uncached, so no Secret value sits in an informer, and again on every
// 30-second pass, which is what picks up a rotated credential.
import { CoreV1Api, VersionApi, type KubeConfig } from "@kubernetes/client-node";
import { kubeProviders, resourceTypes, type KubeProvider } from "../generated/v1alpha3/index.ts";
import { KubeProviderReason } from "../generated/v1alpha3/conditions.ts";
import { informerSource } from "../internal/kube/sources.ts";
import { readSecret } from "../internal/kube/secrets.ts";
import { throttle } from "../internal/kube/throttle.ts";
import { readKubeconfigSecret, type KubeconfigOptions } from "../internal/kubeconfig/secret.ts";
import {
  auditFactsCondition,
  auditRouteOf,
  clientLimits,
  commitRequestsCondition,
  servesCommitRequests,
  routeHolder,
  inClusterConsented,
  providerConditions,
  providerKey,
  type ProviderOutcome,
} from "../internal/kubeprovider/decide.ts";
import { Controller, type Reconciler, type Request, type Result } from "../internal/operator/controller.ts";
import type { SharedInformer } from "../internal/operator/informer.ts";
import type { Manager } from "../internal/operator/manager.ts";
import { StatusWriter } from "../internal/operator/status.ts";
import type { SourceContexts } from "../internal/watch/sourcecontexts.ts";
import { fieldManager } from "../internal/operator/fieldmanager.ts";
import type { CommitRequestServer } from "./commitrequestserver.ts";
import { keyOf } from "../internal/types/names.ts";
import { errorText } from "../internal/telemetry/errortext.ts";

export interface KubeProviderDeps {
  sourceContexts: SourceContexts;
  /** namespace/name of the providers allowed spec.inCluster. */
  inClusterKubeProviders: readonly string[];
  kubeconfig: KubeconfigOptions;
  /** Credentials are re-resolved on the catalog-refresh cadence: 30 s. */
  recheckMs?: number;
  /** With attribution on: when an audit route last delivered a fact. */
  lastFactAt?: (route: string) => Date | undefined;
  /** The source clusters' CommitRequest watches, one per provider whose spec.commitRequests asks. */
  commitRequests?: Pick<CommitRequestServer, "serve" | "release" | "state">;
  /** Shared out, every replica connects each provider, and only the leader writes status. */
  writesStatus?: () => boolean;
}

type Connection =
  | { kubeConfig: KubeConfig; server: string; fingerprint: string }
  | Extract<ProviderOutcome, { kind: "refused" }>;

export class KubeProviderReconciler implements Reconciler {
  private readonly status = new StatusWriter(fieldManager);

  private get recheckMs(): number {
    return this.deps.recheckMs ?? 30_000;
  }

  constructor(
    private readonly operatorConfig: KubeConfig,
    private readonly providers: SharedInformer<KubeProvider>,
    private readonly deps: KubeProviderDeps,
  ) {}

  async reconcile(request: Request): Promise<Result> {
    const key = keyOf(request);
    const provider = this.providers.get(request.name, request.namespace);
    if (!provider) {
      await this.deps.sourceContexts.release(key);
      await this.deps.commitRequests?.release(key);
      return {};
    }

    const connection = this.routeConflict(provider) ?? (await this.connection(provider));
    let outcome: ProviderOutcome;
    if ("kind" in connection) {
      // Fail closed: a connection that may not be used stops the watches that used it.
      await this.deps.sourceContexts.release(key);
      await this.deps.commitRequests?.release(key);
      outcome = connection;
    } else {
      // The probe uses this pass's client, with a throttle of its own: behind a slow provider's
      // queue it would hold up every other provider's reconcile.
      outcome = await this.probe(connection.kubeConfig, connection.server);
      const { kubeConfig } = await this.deps.sourceContexts.ensure(
        key,
        connection.fingerprint,
        connection.kubeConfig,
        connection.server,
        auditRouteOf(provider),
      );
      // The running context's client: the provider's watches share one throttle.
      await this.serveCommitRequests(provider, { ...connection, kubeConfig });
    }

    if (this.deps.writesStatus?.() === false) return { requeueAfterMs: this.recheckMs };
    const route = auditRouteOf(provider);
    const lastFactAt = this.deps.lastFactAt?.(route);
    await this.status.write(kubeProviders(this.operatorConfig), provider, {
      conditions: [
        ...providerConditions(outcome, provider.metadata.generation),
        ...(this.deps.lastFactAt
          ? [auditFactsCondition(route, lastFactAt, provider.metadata.generation)]
          : []),
        ...(this.deps.commitRequests
          ? [
              commitRequestsCondition(
                provider,
                this.deps.commitRequests.state(key),
                outcome.kind === "refused" ? outcome.reason : undefined,
              ),
            ]
          : []),
      ],
      fields: {
        credential: provider.spec.inCluster ? "InCluster" : "Kubeconfig",
        auditRoute: route,
        ...(outcome.kind === "refused" ? {} : { server: outcome.server }),
        // To the minute: facts flow all the time, and each status write costs every watcher.
        ...(lastFactAt ? { lastFactAt: `${lastFactAt.toISOString().slice(0, 16)}:00Z` } : {}),
      },
    });
    return { requeueAfterMs: this.recheckMs };
  }

  /** Keeps the provider's CommitRequest watch in line with spec.commitRequests. */
  private async serveCommitRequests(
    provider: KubeProvider,
    connection: Exclude<Connection, { kind: string }>,
  ): Promise<void> {
    const server = this.deps.commitRequests;
    if (!server) return;
    const key = providerKey(provider);
    if (!servesCommitRequests(provider)) return server.release(key);
    const deletesFinished = provider.spec.commitRequests === "ReconcileAndDeleteFinished";
    await server.serve(key, connection.fingerprint, connection.kubeConfig, deletesFinished);
  }

  /**
   * With attribution on, a provider whose audit route another namespace holds is refused: its
   * source's facts and the holder's would be read as one another's.
   */
  private routeConflict(provider: KubeProvider): Extract<ProviderOutcome, { kind: "refused" }> | undefined {
    if (!this.deps.lastFactAt) return undefined;
    const route = auditRouteOf(provider);
    const holder = routeHolder(route, this.providers.list());
    if (holder === undefined || holder === provider.metadata.namespace) return undefined;
    return {
      kind: "refused",
      reason: KubeProviderReason.AuditRouteConflict,
      message: `The audit route ${route} is held by namespace ${holder}: set spec.attribution.auditRoute to one of this namespace's own, such as ${provider.metadata.namespace}.${provider.metadata.name}.`,
      transient: false,
    };
  }

  /** The client the provider's credential yields, or why there is none. */
  private async connection(provider: KubeProvider): Promise<Connection> {
    if (provider.spec.inCluster) {
      if (!inClusterConsented(provider, this.deps.inClusterKubeProviders)) {
        return {
          kind: "refused",
          reason: KubeProviderReason.InClusterNotAuthorized,
          message: `This installation does not let ${providerKey(provider)} use the operator's own identity: list it in --in-cluster-kube-providers.`,
          transient: false,
        };
      }
      const server = this.operatorConfig.getCurrentCluster()?.server ?? "";
      return {
        kubeConfig: this.operatorConfig,
        server,
        fingerprint: `inCluster/${provider.metadata.generation}`,
      };
    }

    const ref = provider.spec.secretRef!;
    const namespace = provider.metadata.namespace!;
    const secretRead = await readSecret(this.operatorConfig.makeApiClient(CoreV1Api), namespace, ref.name);
    if (secretRead.kind === "forbidden") {
      return {
        kind: "refused",
        reason: KubeProviderReason.SecretNotFound,
        message: `${secretRead.message} It is checked again every ${this.recheckMs / 1000}s.`,
        transient: true,
      };
    }
    const secret = secretRead.kind === "found" ? secretRead.secret : undefined;
    if (!secret) {
      return {
        kind: "refused",
        reason: KubeProviderReason.SecretNotFound,
        message: `Secret ${namespace}/${ref.name} does not exist; it is checked again every ${this.recheckMs / 1000}s.`,
        transient: true,
      };
    }
    const read = readKubeconfigSecret(secret.data, ref.key, this.deps.kubeconfig);
    if ("reason" in read) return { kind: "refused", ...read, transient: false };
    const limits = clientLimits(provider.spec.client);
    const fingerprint = `${secret.metadata?.uid}/${secret.metadata?.resourceVersion}/${ref.key ?? ""}/${provider.metadata.generation}/${JSON.stringify(limits)}`;
    return { kubeConfig: throttle(read.kubeConfig, limits), server: read.server, fingerprint };
  }

  private async probe(kubeConfig: KubeConfig, server: string): Promise<ProviderOutcome> {
    try {
      await kubeConfig.makeApiClient(VersionApi).getCode();
      return { kind: "ready", server };
    } catch (err) {
      return {
        kind: "unreachable",
        server,
        message: `${server} did not answer: ${errorText(err)}`,
      };
    }
  }
}

export function setupKubeProviderController(manager: Manager, deps: KubeProviderDeps): Controller {
  const providers = manager.informer<KubeProvider>(
    informerSource(manager.kubeConfig, resourceTypes.KubeProvider),
  );
  const controller = new Controller(
    "kubeprovider",
    new KubeProviderReconciler(manager.kubeConfig, providers, {
      ...deps,
      writesStatus: () => manager.isLeader,
    }),
    manager.logger,
    { everyReplica: manager.sharded },
  ).for(providers);
  manager.onLeading(() => controller.requeueAll());
  manager.addController(controller);
  return controller;
}
