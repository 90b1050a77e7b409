// What the CommitRequest tests share: a request as a user writes one, and waits on how it ends.
import type { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import type { OperatorSettings } from "../../../controllers/settings.ts";
import { commitRequests, type CommitRequest } from "../../../generated/v1alpha3/index.ts";
import { findCondition } from "../../../internal/operator/conditions.ts";
import { applyMirror, type MirrorTarget } from "../../support/mirror.ts";
import { mirrorUser, startMirrorEnvironment, type MirrorEnvironment } from "../../support/mirrorenv.ts";
import { eventually } from "../../support/wait.ts";

export type RequestSpec = CommitRequest["spec"];

/** Creates a CommitRequest for `target`, as `kc`'s identity. */
export async function createRequest(
  kc: KubeConfig,
  namespace: string,
  name: string,
  spec: Partial<RequestSpec> & { target: string; targetNamespace?: string },
): Promise<CommitRequest> {
  const { target, targetNamespace, ...rest } = spec;
  // Applied as a user's kubectl apply --server-side would: created by a patch answered 201.
  return commitRequests(kc).apply(
    {
      apiVersion: "configbutler.ai/v1alpha3",
      kind: "CommitRequest",
      metadata: { name, namespace },
      spec: {
        gitTargetRef: { name: target, ...(targetNamespace ? { namespace: targetNamespace } : {}) },
        ...rest,
      },
    },
    "test",
  );
}

/** The reason of its Ready condition, once Ready or Stalled is True: how it ended. */
export async function finishedRequest(
  kc: KubeConfig,
  namespace: string,
  name: string,
  timeoutMs = 60_000,
): Promise<CommitRequest> {
  let last = "";
  return eventually(
    async () => {
      const request = await commitRequests(kc).get(namespace, name);
      const conditions = request?.status?.conditions;
      last = JSON.stringify(request?.status ?? {});
      const done =
        findCondition(conditions, "Ready")?.status === "True" ||
        findCondition(conditions, "Stalled")?.status === "True";
      return done && request;
    },
    { timeoutMs, description: () => `CommitRequest ${namespace}/${name} to finish; last status ${last}` },
  );
}

/** Waits until the request's Ready condition gives `reason` (its phase while it runs). */
export async function requestReason(
  kc: KubeConfig,
  namespace: string,
  name: string,
  reason: string,
  timeoutMs = 60_000,
  /** What Ready's message must say too, when the reason alone is reached before it. */
  message?: RegExp,
): Promise<CommitRequest> {
  let last = "";
  return eventually(
    async () => {
      const request = await commitRequests(kc).get(namespace, name);
      const ready = findCondition(request?.status?.conditions, "Ready");
      last = JSON.stringify(ready ?? {});
      return ready?.reason === reason && (!message || message.test(ready.message)) && request;
    },
    {
      timeoutMs,
      description: () =>
        `CommitRequest ${namespace}/${name} Ready ${reason}${message ? ` saying ${String(message)}` : ""}; last ${last}`,
    },
  );
}

export const readyOf = (request: CommitRequest) => findCondition(request.status?.conditions, "Ready");
export const conditionOfRequest = (request: CommitRequest, type: string) =>
  findCondition(request.status?.conditions, type);

/**
 * A mirror of `namespace` into one GitTarget, with a ConfigMap per name (data k: v1), once the
 * first snapshot put the last of them in Git.
 */
export async function startSaving(
  namespace: string,
  target: MirrorTarget,
  configMaps: string[],
  settings: Partial<OperatorSettings>,
): Promise<MirrorEnvironment> {
  const env = await startMirrorEnvironment([namespace], settings);
  for (const name of configMaps)
    await env.core.createNamespacedConfigMap({ namespace, body: { metadata: { name }, data: { k: "v1" } } });
  await applyMirror(env.kc, namespace, env.url, mirrorUser, [target]);
  const last = `${target.path}/${namespace}/configmaps/${configMaps.at(-1)}.yaml`;
  await eventually(() => env.git.fileAt("state", "main", last), {
    timeoutMs: 60_000,
    description: "the first mirror",
  });
  return env;
}

/** Sets a ConfigMap's data.k, as a live edit. */
export const setValue = (core: CoreV1Api, namespace: string, name: string, value: string) =>
  core.patchNamespacedConfigMap({ namespace, name, body: [{ op: "replace", path: "/data/k", value }] });
