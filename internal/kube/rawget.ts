import { HttpMethod, RequestContext, type KubeConfig } from "@kubernetes/client-node";
import { fetch } from "undici";

/** A failed raw request, with the HTTP status the API server answered. */
export class ApiStatusError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * GETs an API path as JSON, authenticated as the KubeConfig's user. For reads that must see the
 * object exactly as served, such as a LIST of any type: client-node's typed APIs deserialize
 * built-in kinds into their models, which renames fields.
 */
export function getJson<T>(
  kubeConfig: KubeConfig,
  path: string,
  query: Record<string, string> = {},
): Promise<T> {
  return requestJson<T>(kubeConfig, HttpMethod.GET, path, query);
}

/** POSTs `body` to an API path as JSON and reads the answer as served, as getJson does. */
export function postJson<T>(
  kubeConfig: KubeConfig,
  path: string,
  query: Record<string, string>,
  body: unknown,
): Promise<T> {
  return requestJson<T>(kubeConfig, HttpMethod.POST, path, query, body);
}

async function requestJson<T>(
  kubeConfig: KubeConfig,
  method: HttpMethod,
  path: string,
  query: Record<string, string>,
  body?: unknown,
): Promise<T> {
  const server = kubeConfig.getCurrentCluster()?.server;
  if (!server) throw new Error("the kubeconfig names no current cluster");
  const url = new URL(path, server);
  for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
  const context = new RequestContext(url.toString(), method);
  await kubeConfig.applySecurityAuthentication(context);
  const headers = {
    ...context.getHeaders(),
    ...(body === undefined ? {} : { "content-type": "application/json" }),
  };
  const response = await fetch(url, {
    method,
    headers,
    dispatcher: context.getDispatcher(),
    // A provider's timeout (kube/throttle.ts), which also bounds reading the answer.
    ...(context.getSignal() ? { signal: context.getSignal() } : {}),
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) {
    let message = text;
    try {
      message = (JSON.parse(text) as { message?: string }).message ?? text;
    } catch {
      // Not a Status object; keep the raw body.
    }
    throw new ApiStatusError(response.status, message);
  }
  return JSON.parse(text) as T;
}
