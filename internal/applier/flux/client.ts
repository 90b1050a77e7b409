// The writes a FluxClaim makes to its Kustomization, each one server-side apply under our field
// manager. spec.suspend is the one field the claim holds; the requestedAt token rides with every
// suspend, so the claim can tell when Flux has handled it. Carrying the uid, a write to a
// Kustomization deleted and re-created meanwhile is refused rather than applied to the new one.
import type { KubeConfig } from "@kubernetes/client-node";
import { ResourceClient } from "../../kube/resourceclient.ts";
import type { NamespacedName } from "../../types/names.ts";
import {
  gitRepositoryType,
  kustomizationType,
  requestedAtAnnotation,
  type GitRepository,
  type Kustomization,
  type KustomizationView,
} from "./view.ts";

export class FluxClient {
  private readonly kustomizations: ResourceClient<Kustomization>;
  private readonly repositories: ResourceClient<GitRepository>;

  constructor(
    kubeConfig: KubeConfig,
    private readonly fieldManager: string,
  ) {
    this.kustomizations = new ResourceClient<Kustomization>(kubeConfig, kustomizationType);
    this.repositories = new ResourceClient<GitRepository>(kubeConfig, gitRepositoryType);
  }

  kustomization(ref: NamespacedName): Promise<Kustomization | undefined> {
    return this.kustomizations.get(ref.namespace, ref.name);
  }

  repository(ref: NamespacedName): Promise<GitRepository | undefined> {
    return this.repositories.get(ref.namespace, ref.name);
  }

  /** Every Kustomization in the cluster, for the source's other consumers. */
  async allKustomizations(): Promise<Kustomization[]> {
    return (await this.kustomizations.list()).items;
  }

  /** spec.suspend: true with `token`, forced, so a flux suspend's Update entry does not block it. */
  async suspend(k: KustomizationView, token: string): Promise<void> {
    await this.kustomizations.apply(this.body(k, { suspend: true }, token), this.fieldManager, true);
  }

  /**
   * Hands spec.suspend back to Flux: first forced to false (a flux suspend's Update entry shares
   * the field with us, and an empty apply alone would leave it true), then given up.
   */
  async release(k: KustomizationView): Promise<void> {
    await this.kustomizations.apply(this.body(k, { suspend: false }), this.fieldManager, true);
    await this.giveUp(k);
  }

  /**
   * Resumes the Kustomization for one apply: spec.suspend: false with `token`, only onto the
   * uid and resourceVersion it was last read at, so anything that changed it since is a 409
   * Conflict and a deleted one is not re-created.
   */
  async resume(k: KustomizationView, token: string): Promise<void> {
    const body = this.body(k, { suspend: false }, token);
    body.metadata!.resourceVersion = k.resourceVersion;
    await this.kustomizations.apply(body, this.fieldManager, true);
  }

  /** Asks source-controller to fetch now: a requestedAt token on the GitRepository. */
  async stampRepository(ref: NamespacedName, token: string): Promise<void> {
    await this.repositories.apply(
      {
        metadata: {
          name: ref.name,
          namespace: ref.namespace,
          annotations: { [requestedAtAnnotation]: token },
        },
      },
      this.fieldManager,
      true,
    );
  }

  /** Gives up every field we own on it: an apply that sets nothing. */
  async giveUp(k: KustomizationView): Promise<void> {
    await this.kustomizations.apply(this.body(k), this.fieldManager, true);
  }

  private body(k: KustomizationView, spec?: { suspend: boolean }, token?: string): Kustomization {
    return {
      metadata: {
        name: k.ref.name,
        namespace: k.ref.namespace,
        uid: k.uid,
        ...(token ? { annotations: { [requestedAtAnnotation]: token } } : {}),
      },
      ...(spec ? { spec } : {}),
    };
  }
}
