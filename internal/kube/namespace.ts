// Where a process's own objects (its leader-election Lease) live: the pod's namespace.
import { readFileSync } from "node:fs";
import type { KubeConfig } from "@kubernetes/client-node";

const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/** The pod's namespace when in a cluster, else the kubeconfig context's, else default. */
export function ownNamespace(kubeConfig: KubeConfig): string {
  if (process.env.POD_NAMESPACE) return process.env.POD_NAMESPACE;
  try {
    return readFileSync(serviceAccountNamespaceFile, "utf8").trim();
  } catch {
    return kubeConfig.getContextObject(kubeConfig.getCurrentContext())?.namespace ?? "default";
  }
}
