// GitProvider: can this repository be reached with this credential? The controller reads the
// credential Secret, asks the remote for its upload-pack ref advertisement with it, and reports
// Validated (the Secret holds a usable credential), Reachable (the remote answered) and the
// kstatus trio. It watches nothing but its own objects: the Secret is read uncached on every
// pass, which is what picks up a fixed or rotated credential.
import { CoreV1Api } from "@kubernetes/client-node";
import { gitProviders, resourceTypes, type GitProvider } from "../generated/v1alpha3/index.ts";
import { decideProvider } from "../internal/gitprovider/decide.ts";
import {
  defaultRecheckIntervals,
  nextPass,
  recheckRateLimiter,
  type RecheckIntervals,
} from "../internal/gitprovider/recheck.ts";
import { checkRemote, secretOf } from "../internal/gitprovider/remotecheck.ts";
import { informerSource } from "../internal/kube/sources.ts";
import { Controller, type Reconciler, type Request, type Result } from "../internal/operator/controller.ts";
import type { SharedInformer } from "../internal/operator/informer.ts";
import type { Manager } from "../internal/operator/manager.ts";
import { StatusWriter } from "../internal/operator/status.ts";
import { fieldManager } from "./fieldmanager.ts";

export interface GitProviderDeps {
  intervals?: Partial<RecheckIntervals>;
  /** How long one ref advertisement may take. */
  probeTimeoutMs?: number;
  now?: () => Date;
}

export class GitProviderReconciler implements Reconciler {
  private readonly status: StatusWriter;
  private readonly intervals: RecheckIntervals;
  private readonly now: () => Date;

  constructor(
    private readonly core: CoreV1Api,
    private readonly client: ReturnType<typeof gitProviders>,
    private readonly providers: SharedInformer<GitProvider>,
    private readonly deps: GitProviderDeps = {},
  ) {
    this.intervals = { ...defaultRecheckIntervals, ...deps.intervals };
    this.now = deps.now ?? (() => new Date());
    this.status = new StatusWriter(fieldManager, this.now);
  }

  async reconcile(request: Request): Promise<Result> {
    const provider = this.providers.get(request.name, request.namespace);
    if (!provider || provider.metadata.deletionTimestamp) return {};

    const check = await checkRemote(this.core, provider, {
      forPush: false,
      timeoutMs: this.deps.probeTimeoutMs,
    });
    const { namespace, name, generation } = provider.metadata;
    const decision = decideProvider(
      check,
      { url: provider.spec.url, provider: `${namespace}/${name}`, secret: secretOf(provider) },
      generation,
    );

    const lastVerifiedAt = decision.verified ? this.now().toISOString() : provider.status?.lastVerifiedAt;
    await this.status.write(this.client, provider, {
      conditions: decision.conditions,
      fields: lastVerifiedAt ? { lastVerifiedAt } : {},
    });
    const ready = decision.conditions.find((c) => c.type === "Ready")!;
    return nextPass(decision.recheck, this.intervals, `${namespace}/${name}: ${ready.message}`);
  }
}

/** Builds the GitProvider controller and adds it to the manager. */
export function setupGitProviderController(manager: Manager, deps: GitProviderDeps = {}): Controller {
  const kc = manager.kubeConfig;
  const providers = manager.informer<GitProvider>(informerSource(kc, resourceTypes.GitProvider));
  const reconciler = new GitProviderReconciler(
    kc.makeApiClient(CoreV1Api),
    gitProviders(kc),
    providers,
    deps,
  );
  const controller = new Controller("gitprovider", reconciler, manager.logger, {
    rateLimiter: recheckRateLimiter({ ...defaultRecheckIntervals, ...deps.intervals }),
  }).for(providers);
  manager.addController(controller);
  return controller;
}
