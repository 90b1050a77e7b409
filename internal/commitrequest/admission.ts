// Which CommitRequests a GitTarget admits: spec.allowedCommitRequests, read for the cluster the
// request was made on. consumerNamespaces admits requests on the control cluster, and
// sourceNamespaces requests on a source cluster, served through a KubeProvider with
// spec.commitRequests. Omitted, only the GitTarget's own namespace on the control cluster is
// admitted; a written list is the whole policy, and [] admits none.
import type { GitTarget } from "../../generated/v1alpha3/index.ts";
import { admitsSourceNamespace, grantsAdmit } from "../grants/namespaces.ts";

export type RequestOrigin =
  /** Made on the control cluster, in a namespace with these labels. */
  | { cluster: "control"; namespace: string; labels: Record<string, string> }
  /** Made on the GitTarget's source cluster, in this namespace there. */
  | { cluster: "source"; namespace: string };

export function admitsCommitRequest(target: GitTarget, origin: RequestOrigin): boolean {
  const grants = target.spec.allowedCommitRequests;
  const targetNamespace = target.metadata.namespace ?? "";
  if (origin.cluster === "control") {
    return grantsAdmit(grants, targetNamespace, origin.namespace, origin.labels).length > 0;
  }
  return (grants ?? []).some(
    (grant) =>
      grant.sourceNamespaces !== undefined &&
      admitsSourceNamespace(grant.sourceNamespaces, targetNamespace, origin.namespace),
  );
}
