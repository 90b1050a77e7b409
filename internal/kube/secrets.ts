// A Secret an object names, read by name: the operator never lists or watches Secrets, and its
// install may grant them in a few namespaces only (the chart's secretNamespaces, docs/rbac.md).
// A read the API server forbids is a state to report with what to do, not an error to retry
// blindly: the Secret exists or not, but this operator may not see it until its RBAC changes.
import type { CoreV1Api, V1Secret } from "@kubernetes/client-node";
import { statusCodeOf } from "./resourceclient.ts";

export type SecretRead =
  { kind: "found"; secret: V1Secret } | { kind: "absent" } | { kind: "forbidden"; message: string };

/** The Secret `namespace/name`, absent, or forbidden with a message naming the fix. */
export async function readSecret(core: CoreV1Api, namespace: string, name: string): Promise<SecretRead> {
  try {
    return { kind: "found", secret: await core.readNamespacedSecret({ namespace, name }) };
  } catch (err) {
    const code = statusCodeOf(err);
    if (code === 404) return { kind: "absent" };
    if (code === 403) return { kind: "forbidden", message: forbiddenSecret(namespace, name) };
    throw err;
  }
}

/** Why the operator cannot read a Secret its RBAC leaves out, and the two ways to grant it. */
export function forbiddenSecret(namespace: string, name: string): string {
  return (
    `The operator may not read Secret ${namespace}/${name} (403 Forbidden): its install grants Secrets in other namespaces only. ` +
    `Add ${namespace} to the chart's secretNamespaces, or grant get on secrets in ${namespace} to its ServiceAccount (docs/rbac.md, "Narrowing the Secret rule").`
  );
}
