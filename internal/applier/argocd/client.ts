// The writes an ArgoCDClaim and its dispatcher make to an Application. The switch
// (syncPolicy.automated.enabled: false) is server-side applied under our field manager, with
// the uid, so a write to an Application deleted and re-created meanwhile is refused. A sync is
// an update of the whole Application, as Argo CD's own SetAppOperation makes it (the CRD has
// no status subresource), onto the resourceVersion read, so it never replaces an operation set
// since.
import { ApiextensionsV1Api, type KubeConfig } from "@kubernetes/client-node";
import { ResourceClient, unlessNotFound } from "../../kube/resourceclient.ts";
import type { NamespacedName } from "../../types/names.ts";
import { withSync } from "./sync.ts";
import {
  applicationType,
  refreshAnnotation,
  type Application,
  type ApplicationView,
  type Operation,
} from "./view.ts";
import { errorText } from "../../telemetry/errortext.ts";

/** The CRD whose schema tells the Argo CD version: 3.1 added syncPolicy.automated.enabled. */
export const applicationCrd = "applications.argoproj.io";

export type VersionCheck =
  { kind: "supported" } | { kind: "unsupported"; message: string } | { kind: "unknown"; message: string };

export class ArgoCDClient {
  private readonly applications: ResourceClient<Application>;

  constructor(
    private readonly kubeConfig: KubeConfig,
    private readonly fieldManager: string,
  ) {
    this.applications = new ResourceClient<Application>(kubeConfig, applicationType);
  }

  application(ref: NamespacedName): Promise<Application | undefined> {
    return this.applications.get(ref.namespace, ref.name);
  }

  /**
   * Whether the cluster's Argo CD has the switch the claim holds. Argo CD 3.1 added
   * syncPolicy.automated.enabled to the Application CRD; on an older one the API server would
   * prune the field from our write, leaving automated sync on while the claim believed it off.
   * So the version is read where it matters: the served schema of the Application CRD.
   */
  async versionCheck(): Promise<VersionCheck> {
    let crd;
    try {
      crd = await unlessNotFound(
        this.kubeConfig
          .makeApiClient(ApiextensionsV1Api)
          .readCustomResourceDefinition({ name: applicationCrd }),
      );
    } catch (err) {
      return {
        kind: "unknown",
        message: `CustomResourceDefinition ${applicationCrd} could not be read to tell the Argo CD version (${errorText(err)}); the KubeProvider's identity needs get on it.`,
      };
    }
    if (!crd)
      return { kind: "unsupported", message: `CustomResourceDefinition ${applicationCrd} is not installed.` };
    const version = crd.spec.versions.find((v) => v.name === applicationType.version && v.served);
    const automated =
      version?.schema?.openAPIV3Schema?.properties?.spec?.properties?.syncPolicy?.properties?.automated;
    if (automated?.properties?.enabled) return { kind: "supported" };
    return {
      kind: "unsupported",
      message: `The Application CRD served here has no spec.syncPolicy.automated.enabled: Argo CD is older than 3.1, and automated sync cannot be held off. Upgrade Argo CD to 3.1 or newer.`,
    };
  }

  /** syncPolicy.automated.enabled: false, forced, so a switch somebody turned on is turned off again. */
  async switchOff(app: ApplicationView): Promise<void> {
    await this.applications.apply(
      { ...this.identity(app), spec: { syncPolicy: { automated: { enabled: false } } } },
      this.fieldManager,
      true,
    );
  }

  /** Gives up every field we own on it: an apply that sets nothing. */
  async giveUp(app: ApplicationView): Promise<void> {
    await this.applications.apply(this.identity(app), this.fieldManager, true);
  }

  /**
   * Off as the Application stood before the claim held it, written by an update (not an apply)
   * under `gitops-reverser-handback`: the value stays, and no apply of ours is left to hold it.
   */
  async leaveOff(app: ApplicationView): Promise<void> {
    await this.applications.jsonPatch(
      this.identity(app),
      [
        { op: "test", path: "/metadata/uid", value: app.uid },
        { op: "add", path: "/spec/syncPolicy/automated/enabled", value: false },
      ],
      `${this.fieldManager}-handback`,
    );
  }

  /** Sets the sync on the Application as read, clearing its operation state, onto its resourceVersion. */
  async requestSync(app: Application, operation: Operation): Promise<Application> {
    return this.applications.replace(withSync(app, operation));
  }

  /**
   * Writes the Application as read, onto its resourceVersion, asking only for a refresh (a
   * compare, never a sync). Once this lands, an update made from the same version never can.
   */
  async refresh(app: Application): Promise<Application> {
    const annotations = { ...app.metadata?.annotations, [refreshAnnotation]: "normal" };
    return this.applications.replace({ ...app, metadata: { ...app.metadata, annotations } });
  }

  private identity(app: ApplicationView): Application {
    return { metadata: { name: app.ref.name, namespace: app.ref.namespace, uid: app.uid } };
  }
}
