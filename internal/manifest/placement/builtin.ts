// Where a new object's document goes when nothing more specific applies: the built-in layout
// {path}/{namespace}/{group}/{resource}/{name}.yaml. Namespace first, no version segment (a
// version change must not move a file), the group left out for the core group, and _cluster
// for cluster-scoped objects: an illegal namespace name, so it never clashes with a real one.

export interface PlacedObject {
  group: string;
  resource: string;
  namespace: string;
  name: string;
}

/** Types written only encrypted: core Secrets always, and resource.group names added by flag. */
export function isSensitive(
  object: Pick<PlacedObject, "group" | "resource">,
  additional: readonly string[] = [],
): boolean {
  if (object.group === "" && object.resource === "secrets") return true;
  const name = object.group === "" ? object.resource : `${object.resource}.${object.group}`;
  return additional.includes(name);
}

/** The built-in path of a new object's document, relative to the repository root. */
export function builtInPath(targetPath: string, object: PlacedObject, sensitive: boolean): string {
  const segments = [
    ...(targetPath === "." ? [] : [targetPath]),
    object.namespace === "" ? "_cluster" : object.namespace,
    ...(object.group === "" ? [] : [object.group]),
    object.resource,
    `${object.name}${sensitive ? ".sops.yaml" : ".yaml"}`,
  ];
  return segments.join("/");
}
