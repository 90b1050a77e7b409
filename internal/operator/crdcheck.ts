// The CRDs the cluster serves, checked against the fields this version writes before anything is
// reconciled. An install whose CRDs are older than its operator (a chart with crds.install off,
// a kustomize install that skipped config/crd) serves a schema that silently prunes what the
// operator writes: status.heldBy, which says which replica holds a branch, or the atomic
// status.operation that recovers an apply in flight. Written and pruned, the operator would act
// on state it believes it kept. So the process waits, says which CRD lacks which field and which
// manifest to apply (in its log and on /readyz), checks again, and starts once they are current.
import { ApiextensionsV1Api, type KubeConfig } from "@kubernetes/client-node";
import type { WrittenKind } from "../../generated/v1alpha3/written.ts";
import { statusCodeOf } from "../kube/resourceclient.ts";
import type { Logger } from "../telemetry/logger.ts";
import { sleep } from "../timing/sleep.ts";
import { errorText } from "../telemetry/errortext.ts";

/** A JSON schema as a CRD serves it, as far as this check reads it. */
export interface FieldSchema {
  type?: string;
  properties?: Record<string, FieldSchema>;
  items?: FieldSchema;
  "x-kubernetes-preserve-unknown-fields"?: boolean;
}

/**
 * Every field path under `schema`, `prefix` first: objects by their properties (a.b), arrays by
 * their items (a[].b). A field that keeps unknown fields is a path ending in ".*".
 */
export function fieldPaths(schema: FieldSchema | undefined, prefix: string): string[] {
  if (!schema) return [];
  const paths = [prefix];
  if (schema["x-kubernetes-preserve-unknown-fields"]) paths.push(`${prefix}.*`);
  for (const [name, property] of Object.entries(schema.properties ?? {}))
    paths.push(...fieldPaths(property, `${prefix}.${name}`));
  if (schema.items) paths.push(...fieldPaths(schema.items, `${prefix}[]`));
  return paths;
}

/** The written fields the served schema lacks; a field under one that keeps unknown fields is kept. */
export function missingFields(served: FieldSchema | undefined, written: readonly string[]): string[] {
  const have = new Set(fieldPaths(served, "status"));
  const open = [...have].filter((p) => p.endsWith(".*")).map((p) => p.slice(0, -2));
  return written.filter(
    (path) =>
      !have.has(path) &&
      !open.some((prefix) => path.startsWith(`${prefix}.`) || path.startsWith(`${prefix}[]`)),
  );
}

/** One served CRD that lacks fields this version writes, with what to do. */
export interface OutdatedCrd {
  crd: string;
  missing: string[];
  message: string;
}

/** What the check found: the outdated CRDs (none: all current), or why it could not look. */
export type CrdCheckResult = { outdated: OutdatedCrd[] } | { unchecked: string };

/** Reads each kind's CRD and compares its served status schema with what this version writes. */
export async function checkCrds(
  kubeConfig: KubeConfig,
  kinds: readonly WrittenKind[],
): Promise<CrdCheckResult> {
  const api = kubeConfig.makeApiClient(ApiextensionsV1Api);
  const outdated: OutdatedCrd[] = [];
  for (const kind of kinds) {
    const served = await servedStatus(api, kind);
    if ("unchecked" in served) return served;
    if ("outdated" in served) {
      outdated.push(served.outdated);
      continue;
    }
    const missing = missingFields(served.status, kind.fields);
    if (missing.length > 0)
      outdated.push({ crd: kind.crd, missing, message: outdatedMessage(kind, missing) });
  }
  return { outdated };
}

/** The status schema a kind's CRD serves at the version this operator writes, or why there is none. */
async function servedStatus(
  api: ApiextensionsV1Api,
  kind: WrittenKind,
): Promise<{ status: FieldSchema | undefined } | { outdated: OutdatedCrd } | { unchecked: string }> {
  try {
    const crd = await api.readCustomResourceDefinition({ name: kind.crd });
    const version = crd.spec.versions.find((v) => v.name === kind.version);
    if (!version) {
      const missing = [`version ${kind.version}`];
      return { outdated: { crd: kind.crd, missing, message: outdatedMessage(kind, missing) } };
    }
    const root: FieldSchema | undefined = version.schema?.openAPIV3Schema;
    return { status: root?.properties?.status };
  } catch (err) {
    const code = statusCodeOf(err);
    if (code === 404) {
      const message = `CustomResourceDefinition ${kind.crd} is not installed: apply ${kind.manifest}.`;
      return { outdated: { crd: kind.crd, missing: ["the CRD"], message } };
    }
    if (code === 403)
      return {
        unchecked: `the operator may not read CustomResourceDefinition ${kind.crd} (403 Forbidden): its ClusterRole lacks get on customresourcedefinitions for its own CRDs`,
      };
    return { unchecked: (err as Error).message };
  }
}

function outdatedMessage(kind: WrittenKind, missing: string[]): string {
  const shown = missing.length > 3 ? [...missing.slice(0, 3), `${missing.length - 3} more`] : missing;
  return (
    `CustomResourceDefinition ${kind.crd} lacks ${shown.join(", ")}, which this version of the operator writes: ` +
    `apply this version's ${kind.manifest} (kubectl apply --server-side -f), or helm upgrade with crds.install (the default).`
  );
}

/**
 * Between checks: 5 s. The user who is told to apply the CRDs then waits for the operator to see
 * them, so it starts within seconds of the apply; a check is one GET per CRD it writes.
 */
const crdCheckIntervalMs = 5_000;

/**
 * Waits until every CRD is current, checking every `intervalMs`; `report` hears each finding
 * (undefined once current), for /readyz. A check that cannot look does not hold the start.
 */
export async function untilCrdsCurrent(
  kubeConfig: KubeConfig,
  kinds: readonly WrittenKind[],
  logger: Logger,
  signal: AbortSignal,
  report: (problem: string | undefined) => void,
  intervalMs = crdCheckIntervalMs,
): Promise<void> {
  let refused = false;
  while (!signal.aborted) {
    const result = await checkCrds(kubeConfig, kinds).catch((err: unknown) => ({
      unchecked: errorText(err),
    }));
    if ("unchecked" in result) {
      logger.warn("the CRDs could not be checked against this version; starting anyway", {
        reason: result.unchecked,
      });
      break;
    }
    if (result.outdated.length === 0) break;
    refused = true;
    report(result.outdated.map((o) => o.message).join(" "));
    // Said again at every check: the one thing this process is waiting for.
    for (const o of result.outdated)
      logger.error("a CRD is older than this operator; nothing is reconciled until it is applied", {
        crd: o.crd,
        missing: o.missing,
        message: o.message,
      });
    await sleep(intervalMs, signal).catch(() => undefined);
  }
  report(undefined);
  if (refused && !signal.aborted) logger.info("the CRDs are current; starting");
}
