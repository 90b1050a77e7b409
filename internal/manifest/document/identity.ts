// The effective identity of a document: the namespace its object has once the folder is applied.
// kustomize's namespace transformer sets a kustomization's `namespace:` on every namespaced
// resource it builds, overriding the one a document writes, and leaves cluster-scoped kinds
// alone; the outermost kustomization runs last, so its namespace wins. A namespaced document with
// no namespace at all is filled in by its applier (Argo CD's destination namespace), which the
// operator does not know yet: it describes the one followed object of its kind and name, and is
// ambiguous when the target follows that name in more than one namespace. Pure rules only.
/** What the target's collections hold, by name: which namespaces an object of a name is followed in. */
export interface FollowedObjects {
  /** The namespaces a followed object of this group, kind and name lives in. */
  namespacesOf(group: string, kind: string, name: string): ReadonlySet<string>;
  /** Whether a collection of the target follows this group and kind as a namespaced type. */
  followsNamespaced(group: string, kind: string): boolean;
}

/** A target that follows nothing yet: a namespace-less document then describes whatever comes. */
export const nothingFollowed: FollowedObjects = {
  namespacesOf: () => new Set(),
  followsNamespaced: () => false,
};

/**
 * The namespace a document renders in: the kustomization chain's `namespace:` for a namespaced
 * kind, overriding the document's own; a cluster-scoped kind keeps what it writes.
 */
export function effectiveNamespace(
  written: string,
  override: string | undefined,
  namespaced: boolean,
): string {
  return namespaced && override !== undefined ? override : written;
}

/**
 * The namespace a kustomization chain (innermost first) sets: the outermost `namespace:`, as
 * kustomize applies each level's transformer over what the levels inside it built.
 */
export function chainNamespace(
  chain: readonly string[],
  namespaceOf: (kustomization: string) => string | undefined,
): string | undefined {
  let namespace: string | undefined;
  for (const kustomization of chain) namespace = namespaceOf(kustomization) ?? namespace;
  return namespace;
}

/**
 * Whether a namespace-less document (no namespace written, none set by a kustomization) describes
 * the object of its kind and name in `namespace`: when no followed object of that name lives in
 * any other namespace.
 */
export function namespacelessDescribes(namespace: string, followedIn: ReadonlySet<string>): boolean {
  for (const other of followedIn) if (other !== namespace) return false;
  return true;
}

/**
 * The desired object with the namespace its document writes: none, or one a kustomization
 * overrides. An edit changes what the object holds, never how its document names it. Pure;
 * `desired` is the writer's own copy, changed in place.
 */
export function keepWrittenNamespace(written: unknown, desired: unknown): unknown {
  const metadata = (value: unknown) =>
    typeof value === "object" && value !== null && "metadata" in value ? value.metadata : undefined;
  const [before, after] = [metadata(written), metadata(desired)];
  if (typeof after !== "object" || after === null) return desired;
  const namespace =
    typeof before === "object" && before !== null && "namespace" in before ? before.namespace : undefined;
  if (namespace === undefined) delete (after as { namespace?: unknown }).namespace;
  else (after as { namespace?: unknown }).namespace = namespace;
  return desired;
}
