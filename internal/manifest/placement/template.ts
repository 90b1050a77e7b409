// The brace path language of spec.placement: a template names a file relative to spec.path, and
// each {variable} is replaced by a part of the object's identity. Substitution and nothing else,
// so a path depends on the identity alone.
import type { ResourceIdentity } from "../../types/identity.ts";

/** The template variables: an object's identity, without the uid a path must never depend on. */
export type PlacementVariables = Omit<ResourceIdentity, "uid">;

const variable = /\{(namespace|group|version|resource|kind|name)\}/g;

/** Renders a brace template, with _cluster as a cluster-scoped object's namespace and no core group. */
export function renderTemplate(template: string, vars: PlacementVariables): string {
  const values: PlacementVariables = {
    ...vars,
    // The same choices as the built-in layout, so "{namespace}/{group}/{resource}/{name}.yaml"
    // spells it exactly: _cluster is an illegal namespace name and never clashes with a real
    // one, and the core group has no name ("core" is not what the API calls it), so its
    // segment collapses rather than inventing a folder.
    namespace: vars.namespace === "" ? "_cluster" : vars.namespace,
  };
  const rendered = template.replace(variable, (_match, name: keyof PlacementVariables) => values[name]);
  // An empty variable must not leave "//" or a leading "/", which would name another folder or
  // the repository root; a "." segment names nothing either.
  return rendered
    .split("/")
    .filter((segment) => segment !== "" && segment !== ".")
    .join("/");
}

/** The byType key of a type: "[group/]version/resource". */
export function typeKey(group: string, version: string, resource: string): string {
  return group === "" ? `${version}/${resource}` : `${group}/${version}/${resource}`;
}
