import { isDeepStrictEqual } from "node:util";
import type { KubernetesObject } from "@kubernetes/client-node";
import type { ResourceClient } from "../kube/resourceclient.ts";
import { findCondition, setCondition, type Condition, type ConditionUpdate } from "./conditions.ts";

type WithStatus = KubernetesObject & { status?: { conditions?: Condition[]; observedGeneration?: number } };

export interface StatusUpdate {
  conditions: ConditionUpdate[];
  /** Other status fields this controller owns, such as gitTargetCount. */
  fields?: Record<string, unknown>;
}

/**
 * The status a reconcile decided, as the fields this writer applies: its own fields, the
 * object's generation, and only the conditions it sets, each keeping its transition time
 * unless its status changed. Conditions other writers own are left out, so server-side apply
 * leaves them to their owners.
 */
export function desiredStatus(object: WithStatus, update: StatusUpdate, now: Date): Record<string, unknown> {
  const current = object.status?.conditions ?? [];
  const conditions = update.conditions.map((u) => findCondition(setCondition(current, u, now), u.type)!);
  return { ...update.fields, observedGeneration: object.metadata?.generation, conditions };
}

/**
 * The condition types `fieldManager` owns on the object's status, read from managedFields: what
 * its last server-side apply set. Another writer's conditions are not among them.
 */
export function ownedConditionTypes(object: KubernetesObject, fieldManager: string): Set<string> {
  const owned = new Set<string>();
  for (const entry of object.metadata?.managedFields ?? []) {
    if (entry.manager !== fieldManager || entry.subresource !== "status") continue;
    const conditions = (
      entry.fieldsV1 as { "f:status"?: { "f:conditions"?: Record<string, unknown> } } | undefined
    )?.["f:status"]?.["f:conditions"];
    for (const key of Object.keys(conditions ?? {})) {
      if (!key.startsWith("k:")) continue;
      const type = (JSON.parse(key.slice(2)) as { type?: string }).type;
      if (type) owned.add(type);
    }
  }
  return owned;
}

/**
 * Whether the object's status already says everything `desired` says, and holds no condition
 * this writer set before and no longer sets: applying would remove that one.
 */
export function statusHolds(
  object: WithStatus,
  desired: Record<string, unknown>,
  fieldManager?: string,
): boolean {
  const status = (object.status ?? {}) as Record<string, unknown>;
  if (fieldManager) {
    const wanted = new Set((desired.conditions as Condition[] | undefined)?.map((c) => c.type));
    for (const type of ownedConditionTypes(object, fieldManager)) if (!wanted.has(type)) return false;
  }
  return Object.entries(desired).every(([key, value]) => {
    if (key !== "conditions") return isDeepStrictEqual(status[key], value);
    return (value as Condition[]).every((c) =>
      isDeepStrictEqual(findCondition(object.status?.conditions, c.type), c),
    );
  });
}

/**
 * Writes a reconcile's status through the status subresource, and only when something
 * changed: a status write invalidates every watcher's copy of the object, so a controller
 * that rewrote an unchanged status on every pass would wake all of them for nothing.
 */
export class StatusWriter {
  constructor(
    private readonly fieldManager: string,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /**
   * Returns true when it wrote. `conditional`: only onto the resourceVersion the status was
   * decided from, so a status decided from a stale read is refused (409) and decided again.
   */
  async write<T extends WithStatus>(
    client: ResourceClient<T>,
    object: T,
    update: StatusUpdate,
    conditional = false,
  ): Promise<boolean> {
    const desired = desiredStatus(object, update, this.now());
    if (statusHolds(object, desired, this.fieldManager)) return false;
    const { name, namespace, resourceVersion } = object.metadata ?? {};
    const metadata = { name, namespace, ...(conditional ? { resourceVersion } : {}) };
    await client.applyStatus({ metadata, status: desired } as unknown as T, this.fieldManager);
    return true;
  }
}
