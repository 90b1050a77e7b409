// Attribution facts: what an audit event says about who made a write, and nothing more. Watch,
// not audit, carries the object; a fact only names the actor of one persisted write and the
// keys a watch event can be joined to it by.

/** The parts of an audit.k8s.io/v1 Event attribution reads. */
export interface AuditEvent {
  auditID?: string;
  stage?: string;
  verb?: string;
  requestURI?: string;
  user?: UserInfo;
  impersonatedUser?: UserInfo;
  objectRef?: {
    resource?: string;
    subresource?: string;
    apiGroup?: string;
    namespace?: string;
    name?: string;
    uid?: string;
    resourceVersion?: string;
  };
  responseStatus?: { code?: number };
  requestObject?: { metadata?: { resourceVersion?: string } };
  responseObject?: {
    kind?: string;
    metadata?: { resourceVersion?: string; uid?: string };
    details?: { uid?: string };
    items?: { metadata?: { uid?: string } }[];
  };
  stageTimestamp?: string;
  annotations?: Record<string, string>;
}

export interface UserInfo {
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

/** Who made a write: the identity the API server authorized it as. */
export interface Actor {
  username: string;
  extra?: Record<string, string[]>;
}

/** One accepted write's fact, or one deletecollection's. */
export interface Fact {
  auditID: string;
  actor: Actor;
  verb: string;
  subresource?: string;
  /** The audit route the event came in on: the source KubeProvider's. */
  route: string;
  group: string;
  resource: string;
  namespace: string;
  name: string;
  uid: string;
  /** The response object's resourceVersion: the version the write made. */
  resourceVersion: string;
  /** When the API server finished the request, in milliseconds since the epoch. */
  at: number;
  /** A deletecollection: the selector it was made with, and the uids the API server returned. */
  collection?: { labelSelector?: string; fieldSelector?: string; uids: string[] };
  /** The write created the object: a create, or an apply or update answered 201 Created. */
  created?: true;
}

const mutating = new Set(["create", "update", "patch", "delete", "deletecollection"]);

/**
 * Whether an audit event records a persisted write a watch event can come from: the complete
 * response of a mutating verb that succeeded, not a dry run, that changed the resourceVersion,
 * on the object itself or its /scale (a scale reaches Git as the parent's own watch event).
 */
export function accepted(event: AuditEvent): boolean {
  if (event.stage !== "ResponseComplete" || !mutating.has(event.verb ?? "")) return false;
  const code = event.responseStatus?.code ?? 0;
  if (code < 200 || code > 299) return false;
  if (dryRun(event.requestURI)) return false;
  const subresource = event.objectRef?.subresource;
  if (subresource !== undefined && subresource !== "" && subresource !== "scale") return false;
  const before = event.requestObject?.metadata?.resourceVersion;
  const after = event.responseObject?.metadata?.resourceVersion;
  // A write that changed nothing keeps its resourceVersion and makes no watch event.
  return !(before !== undefined && before === after && event.verb !== "delete");
}

/** The fact of an accepted event, on the route it came in on. */
export function factOf(event: AuditEvent, route: string): Fact | undefined {
  const actor = actorOf(event);
  const ref = event.objectRef;
  if (!actor || !ref?.resource) return undefined;
  const response = event.responseObject;
  const fact: Fact = {
    auditID: event.auditID ?? "",
    actor,
    verb: event.verb!,
    ...(ref.subresource ? { subresource: ref.subresource } : {}),
    route,
    group: ref.apiGroup ?? "",
    resource: ref.resource,
    namespace: ref.namespace ?? "",
    name: ref.name ?? "",
    // A delete answers with the object (while finalizers hold it) or a Status naming its uid.
    uid: ref.uid ?? response?.metadata?.uid ?? response?.details?.uid ?? "",
    resourceVersion: response?.kind === "Status" ? "" : (response?.metadata?.resourceVersion ?? ""),
    at: Date.parse(event.stageTimestamp ?? "") || Date.now(),
    ...(event.verb === "create" || event.responseStatus?.code === 201 ? { created: true as const } : {}),
  };
  if (event.verb === "deletecollection") {
    const query = new URLSearchParams(event.requestURI?.split("?")[1] ?? "");
    fact.collection = {
      ...(query.get("labelSelector") ? { labelSelector: query.get("labelSelector")! } : {}),
      ...(query.get("fieldSelector") ? { fieldSelector: query.get("fieldSelector")! } : {}),
      uids: (response?.items ?? []).map((item) => item.metadata?.uid ?? "").filter((uid) => uid !== ""),
    };
  }
  return fact;
}

/** Every accepted event's fact, grouped by type (group/resource): one append per type per request. */
export function factsByType(events: readonly AuditEvent[], route: string): Map<string, Fact[]> {
  const byType = new Map<string, Fact[]>();
  for (const event of events) {
    if (!accepted(event)) continue;
    const fact = factOf(event, route);
    if (!fact) continue;
    const type = `${fact.group}/${fact.resource}`;
    byType.set(type, [...(byType.get(type) ?? []), fact]);
  }
  return byType;
}

/**
 * The identity the write was authorized as: the impersonated user when there is one, as
 * RBAC judged the request by it; otherwise the authenticated user.
 */
function actorOf(event: AuditEvent): Actor | undefined {
  const user = event.impersonatedUser?.username ? event.impersonatedUser : event.user;
  if (!user?.username) return undefined;
  return { username: user.username, ...(user.extra ? { extra: user.extra } : {}) };
}

function dryRun(requestURI: string | undefined): boolean {
  const query = new URLSearchParams(requestURI?.split("?")[1] ?? "");
  return query.getAll("dryRun").some((v) => v !== "");
}
