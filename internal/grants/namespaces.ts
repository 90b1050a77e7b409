// Which namespaces a grant admits. Every grant in the API has the same shape
// (NamespaceSelection), so one evaluator serves KubeProvider, GitProvider, GitBranch and
// GitTarget grants alike. Pure: the caller passes the namespace's labels.
import { selectorMatches } from "../kube/labels.ts";
import type { NamespaceSelection, SourceNamespaceSelection } from "../../generated/v1alpha3/index.ts";

/**
 * Whether `selection`, written on an object in `ownerNamespace`, admits `namespace`. An omitted
 * `from` means Same, as the schema defaults it.
 */
export function admitsNamespace(
  selection: NamespaceSelection,
  ownerNamespace: string,
  namespace: string,
  labels: Record<string, string>,
): boolean {
  switch (selection.from ?? "Same") {
    case "Same":
      return namespace === ownerNamespace;
    case "Names":
      return selection.names?.includes(namespace) ?? false;
    case "Selector":
      return selection.selector ? selectorMatches(selection.selector, labels) : false;
    case "All":
      return true;
  }
}

/**
 * Whether a source-namespace selection admits `sourceNamespace` for a consumer in
 * `consumerNamespace`: Same pairs namespaces by name across the two clusters. "" (every
 * namespace) is admitted only by All.
 */
export function admitsSourceNamespace(
  selection: SourceNamespaceSelection | undefined,
  consumerNamespace: string,
  sourceNamespace: string,
): boolean {
  switch (selection?.from ?? "Same") {
    case "Same":
      return sourceNamespace === consumerNamespace;
    case "Names":
      return sourceNamespace !== "" && (selection?.names?.includes(sourceNamespace) ?? false);
    case "All":
      return true;
  }
}

/**
 * Whether a list of grants, written on an object in `ownerNamespace`, admits `namespace`.
 * Omitted, the owner's own namespace is admitted; a written list is the whole policy, and []
 * admits none.
 */
export function grantsAdmit<G extends { consumerNamespaces?: NamespaceSelection }>(
  grants: G[] | undefined,
  ownerNamespace: string,
  namespace: string,
  labels: Record<string, string>,
): G[] {
  if (grants === undefined) {
    return namespace === ownerNamespace ? [{ consumerNamespaces: { from: "Same" } } as G] : [];
  }
  return grants.filter(
    (g) =>
      g.consumerNamespaces !== undefined &&
      admitsNamespace(g.consumerNamespaces, ownerNamespace, namespace, labels),
  );
}
