import {
  CustomObjectsApi,
  PatchStrategy,
  Watch,
  setHeaderOptions,
  type KubeConfig,
  type KubernetesObject,
} from "@kubernetes/client-node";

/** What the API server needs to address one kind of custom resource. */
export interface ResourceType {
  group: string;
  version: string;
  kind: string;
  plural: string;
  namespaced: boolean;
}

export interface ListResult<T> {
  items: T[];
  resourceVersion: string;
}

export type WatchPhase = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK";

export interface WatchOptions {
  resourceVersion?: string;
  resourceVersionMatch?: "NotOlderThan" | "Exact";
  sendInitialEvents?: boolean;
  allowWatchBookmarks?: boolean;
  labelSelector?: string;
}

/** The status code of a failed API call, from the ApiException client-node throws. */
export function statusCodeOf(err: unknown): number | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "number" ? code : undefined;
}

/**
 * What `call` answers, or undefined when the API server answers 404 Not Found: the object does
 * not exist, which callers take as a state, not a failure. Every other error is thrown.
 */
export async function unlessNotFound<T>(call: Promise<T>): Promise<T | undefined> {
  try {
    return await call;
  } catch (err) {
    if (statusCodeOf(err) === 404) return undefined;
    throw err;
  }
}

const applyHeaders = setHeaderOptions("Content-Type", PatchStrategy.ServerSideApply);
const jsonPatchHeaders = setHeaderOptions("Content-Type", PatchStrategy.JsonPatch);

/**
 * A typed client for one kind of custom resource: get, list, watch, server-side apply of the
 * object and of its status, and delete. `namespace` is ignored for cluster-scoped kinds.
 */
export class ResourceClient<T extends KubernetesObject> {
  private readonly api: CustomObjectsApi;

  constructor(
    private readonly kubeConfig: KubeConfig,
    readonly type: ResourceType,
  ) {
    this.api = kubeConfig.makeApiClient(CustomObjectsApi);
  }

  get apiVersion(): string {
    return `${this.type.group}/${this.type.version}`;
  }

  /** The object, or undefined if it does not exist. */
  async get(namespace: string | undefined, name: string): Promise<T | undefined> {
    const { group, version, plural } = this.type;
    const object: unknown = await unlessNotFound(
      this.type.namespaced
        ? this.api.getNamespacedCustomObject({ group, version, plural, namespace: this.ns(namespace), name })
        : this.api.getClusterCustomObject({ group, version, plural, name }),
    );
    return object as T | undefined;
  }

  /** Every object in a namespace, or across namespaces when namespace is undefined. */
  async list(namespace?: string, options: { labelSelector?: string } = {}): Promise<ListResult<T>> {
    const { group, version, plural } = this.type;
    const list = (await (this.type.namespaced && namespace !== undefined
      ? this.api.listNamespacedCustomObject({ group, version, plural, namespace, ...options })
      : this.api.listClusterCustomObject({ group, version, plural, ...options }))) as {
      items: T[];
      metadata?: { resourceVersion?: string };
    };
    return { items: list.items, resourceVersion: list.metadata?.resourceVersion ?? "" };
  }

  /** Creates a namespaced object (one named by metadata.generateName too), and returns it. */
  async create(object: T): Promise<T> {
    const { group, version, plural } = this.type;
    const body = { ...object, apiVersion: this.apiVersion, kind: this.type.kind };
    const namespace = this.ns(object.metadata?.namespace);
    return (await this.api.createNamespacedCustomObject({ group, version, plural, namespace, body })) as T;
  }

  /** Server-side applies the fields `object` sets, as `fieldManager`, and returns the result. */
  async apply(object: T, fieldManager: string, force = false): Promise<T> {
    const body = { ...object, apiVersion: this.apiVersion, kind: this.type.kind };
    return this.serverSideApply("object", object, body, fieldManager, force);
  }

  /**
   * Server-side applies the status `object` carries, through the status subresource; with a
   * metadata.resourceVersion, only onto that version (a 409 Conflict otherwise).
   */
  async applyStatus(object: T, fieldManager: string, force = true): Promise<T> {
    const { namespace, resourceVersion } = object.metadata ?? {};
    const body = {
      apiVersion: this.apiVersion,
      kind: this.type.kind,
      metadata: { name: this.nameOf(object), namespace, ...(resourceVersion ? { resourceVersion } : {}) },
      status: (object as { status?: unknown }).status,
    };
    return this.serverSideApply("status", object, body, fieldManager, force);
  }

  /**
   * Replaces the whole object (an update, PUT) onto its metadata.resourceVersion: a 409 Conflict
   * when it changed since it was read. For a kind with no status subresource, the status too.
   */
  async replace(object: T): Promise<T> {
    const { group, version, plural } = this.type;
    const body = { ...object, apiVersion: this.apiVersion, kind: this.type.kind };
    const request = { group, version, plural, name: this.nameOf(object), body };
    const result: unknown = this.type.namespaced
      ? await this.api.replaceNamespacedCustomObject({
          ...request,
          namespace: this.ns(object.metadata?.namespace),
        })
      : await this.api.replaceClusterCustomObject(request);
    return result as T;
  }

  /**
   * Applies an RFC 6902 JSON patch, such as one guarded by test operations, and returns the
   * result; `fieldManager` names the Update entry it leaves in managedFields.
   */
  async jsonPatch(object: T, operations: object[], fieldManager?: string): Promise<T> {
    const { group, version, plural } = this.type;
    const request = {
      group,
      version,
      plural,
      name: this.nameOf(object),
      body: operations,
      ...(fieldManager ? { fieldManager } : {}),
    };
    const result: unknown = this.type.namespaced
      ? await this.api.patchNamespacedCustomObject(
          { ...request, namespace: this.ns(object.metadata?.namespace) },
          jsonPatchHeaders,
        )
      : await this.api.patchClusterCustomObject(request, jsonPatchHeaders);
    return result as T;
  }

  /** Deletes the object; a missing one is not an error. */
  async delete(namespace: string | undefined, name: string): Promise<void> {
    const { group, version, plural } = this.type;
    await unlessNotFound(
      this.type.namespaced
        ? this.api.deleteNamespacedCustomObject({
            group,
            version,
            plural,
            namespace: this.ns(namespace),
            name,
          })
        : this.api.deleteClusterCustomObject({ group, version, plural, name }),
    );
  }

  /**
   * Opens a watch and calls `onEvent` for each event, in order. `onDone` is called once when the
   * watch ends, with the error that ended it if any. Abort the returned controller to stop it.
   */
  async watch(
    namespace: string | undefined,
    options: WatchOptions,
    onEvent: (phase: WatchPhase, object: T) => void,
    onDone: (err?: unknown) => void,
  ): Promise<AbortController> {
    const { group, version, plural } = this.type;
    const path =
      this.type.namespaced && namespace !== undefined
        ? `/apis/${group}/${version}/namespaces/${namespace}/${plural}`
        : `/apis/${group}/${version}/${plural}`;
    return new Watch(this.kubeConfig).watch(
      path,
      { ...options },
      (phase, object) => onEvent(phase as WatchPhase, object as T),
      (err: unknown) => onDone(err ?? undefined),
    );
  }

  private async serverSideApply(
    target: "object" | "status",
    object: T,
    body: object,
    fieldManager: string,
    force: boolean,
  ): Promise<T> {
    const { group, version, plural } = this.type;
    const request = { group, version, plural, name: this.nameOf(object), body, fieldManager, force };
    let result: unknown;
    if (this.type.namespaced) {
      const namespaced = { ...request, namespace: this.ns(object.metadata?.namespace) };
      result = await (target === "status"
        ? this.api.patchNamespacedCustomObjectStatus(namespaced, applyHeaders)
        : this.api.patchNamespacedCustomObject(namespaced, applyHeaders));
    } else {
      result = await (target === "status"
        ? this.api.patchClusterCustomObjectStatus(request, applyHeaders)
        : this.api.patchClusterCustomObject(request, applyHeaders));
    }
    return result as T;
  }

  private ns(namespace: string | undefined): string {
    if (!namespace) throw new Error(`${this.type.kind} is namespaced: a namespace is required`);
    return namespace;
  }

  private nameOf(object: T): string {
    const name = object.metadata?.name;
    if (!name) throw new Error(`${this.type.kind}: metadata.name is required`);
    return name;
  }
}
