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
export async function getJson<T>(
  kubeConfig: KubeConfig,
  path: string,
  query: Record<string, string> = {},
): Promise<T> {
  const server = kubeConfig.getCurrentCluster()?.server;
  if (!server) throw new Error("the kubeconfig names no current cluster");
  const url = new URL(path, server);
  for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
  const context = new RequestContext(url.toString(), HttpMethod.GET);
  await kubeConfig.applySecurityAuthentication(context);
  const response = await fetch(url, { headers: context.getHeaders(), dispatcher: context.getDispatcher() });
  const body = await response.text();
  if (!response.ok) {
    let message = body;
    try {
      message = (JSON.parse(body) as { message?: string }).message ?? body;
    } catch {
      // Not a Status object; keep the raw body.
    }
    throw new ApiStatusError(response.status, message);
  }
  return JSON.parse(body) as T;
}
