// GitProvider: can this repository be reached with this credential? The controller reads the
// credential Secret, asks the remote for its upload-pack ref advertisement with it, and reports
// Validated (the Secret holds a usable credential), Reachable (the remote answered) and the
// kstatus trio. It watches nothing but its own objects: the Secret is read uncached on every
// pass, which is what picks up a fixed or rotated credential.
import { anyOf, generationChanged, reconcileRequested } from "../internal/operator/predicates.ts";
import { statusCodeOf } from "../internal/kube/resourceclient.ts";
import { CoreV1Api } from "@kubernetes/client-node";
import { gitProviders, resourceTypes, type GitProvider } from "../generated/v1alpha3/index.ts";
import { decideProvider } from "../internal/gitprovider/decide.ts";
import {
  defaultRecheckIntervals,
  nextPass,
  recheckRateLimiter,
  type RecheckIntervals,
} from "../internal/gitprovider/recheck.ts";
import { checkRemote } from "../internal/gitprovider/remotecheck.ts";
import { loadSigning, secretOf } from "../internal/gitprovider/secrets.ts";
import { decideSigning, examineSigningKey, type SigningDecision } from "../internal/gitprovider/signing.ts";
import { signingFormatOf, signingKeyText, signingSecretOf } from "../internal/signing/secret.ts";
import { generateSigningKey } from "../internal/signing/sshkey.ts";
import { stalledTrio, type ConditionUpdate } from "../internal/operator/conditions.ts";
import { informerSource } from "../internal/kube/sources.ts";
import { Controller, type Reconciler, type Request, type Result } from "../internal/operator/controller.ts";
import type { SharedInformer } from "../internal/operator/informer.ts";
import type { Manager } from "../internal/operator/manager.ts";
import { StatusWriter } from "../internal/operator/status.ts";
import { fieldManager } from "../internal/operator/fieldmanager.ts";
import { keyOf } from "../internal/types/names.ts";

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
      { url: provider.spec.url, provider: keyOf({ namespace, name }), secret: secretOf(provider) },
      generation,
    );

    const signing = await this.signing(provider);
    const conditions = signing ? withSigning(decision.conditions, signing) : decision.conditions;
    const lastVerifiedAt = decision.verified ? this.now().toISOString() : provider.status?.lastVerifiedAt;
    await this.status.write(this.client, provider, {
      conditions,
      fields: {
        ...(lastVerifiedAt ? { lastVerifiedAt } : {}),
        ...(signing?.kind === "ready" ? { signingPublicKey: signing.publicKey } : {}),
      },
    });
    const ready = conditions.find((c) => c.type === "Ready")!;
    return nextPass(decision.recheck, this.intervals, `${namespace}/${name}: ${ready.message}`);
  }

  /**
   * spec.commit.signing, decided; a missing key generated first when the spec asks for that (an
   * SSH key only). The key is read whole here, an OpenPGP key decrypted and proved, so the
   * condition says what is wrong with it before a push would find out.
   */
  private async signing(
    provider: GitProvider,
  ): Promise<Exclude<SigningDecision, { kind: "generate" }> | undefined> {
    const where = signingSecretOf(provider);
    if (!where) return undefined;
    const format = signingFormatOf(provider);
    const generate = format === "ssh" && (provider.spec.commit?.signing?.generateWhenMissing ?? false);
    const generation = provider.metadata.generation;
    const decide = async (generateWhenMissing: boolean) => {
      const read = (await loadSigning(this.core, provider))!;
      const examined = await examineSigningKey(read, format);
      return decideSigning(read, generateWhenMissing, generation, {
        format,
        ...(examined ? { examined } : {}),
      });
    };
    const decision = await decide(generate);
    if (decision.kind !== "generate") return decision;
    await this.generateKey(provider, where, decision.create);
    const again = await decide(false);
    if (again.kind === "generate") throw new Error("unreachable: generation was not asked for");
    return again;
  }

  /** Writes a new ed25519 key into the signing Secret: creates it, or adds the key to it. */
  private async generateKey(provider: GitProvider, where: { name: string; key: string }, create: boolean) {
    const { privateKey, publicKey } = generateSigningKey(
      `gitops-reverser ${provider.metadata.namespace}/${provider.metadata.name}`,
    );
    const namespace = provider.metadata.namespace!;
    const data = {
      [where.key]: Buffer.from(privateKey).toString("base64"),
      [`${where.key}.pub`]: Buffer.from(`${publicKey}\n`).toString("base64"),
    };
    if (create) {
      await this.core
        .createNamespacedSecret({ namespace, body: { metadata: { name: where.name }, type: "Opaque", data } })
        .catch((err: unknown) => {
          // Created meanwhile by someone else: the next read takes theirs.
          if (statusCodeOf(err) !== 409) throw err;
        });
      return;
    }
    // Written over the Secret as read, so a key someone else wrote meanwhile is never replaced.
    const secret = await this.core.readNamespacedSecret({ namespace, name: where.name });
    if (signingKeyText(secret.data, where.key) !== undefined) return;
    secret.data = { ...secret.data, ...data };
    await this.core
      .replaceNamespacedSecret({ namespace, name: where.name, body: secret })
      .catch((err: unknown) => {
        if (statusCodeOf(err) !== 409) throw err;
      });
  }
}

/** The provider's conditions with SigningConfigured, and not Ready while no key can sign. */
function withSigning(
  conditions: ConditionUpdate[],
  signing: Exclude<SigningDecision, { kind: "generate" }>,
): ConditionUpdate[] {
  if (signing.kind === "ready") return [...conditions, signing.condition];
  const { reason, message, observedGeneration } = signing.condition;
  return [
    ...stalledTrio(reason, message, observedGeneration),
    ...conditions.filter((c) => !trioTypes.has(c.type)),
    signing.condition,
  ];
}

const trioTypes = new Set(["Ready", "Reconciling", "Stalled"]);

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
    // reconcile.configbutler.ai/requestedAt: look again now, as after fixing a Secret.
  }).for(providers, anyOf(generationChanged, reconcileRequested));
  manager.addController(controller);
  return controller;
}
