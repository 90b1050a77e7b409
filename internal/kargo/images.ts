// Container image references, as Argo CD's status.summary.images and Kargo's Freight write
// them: [registry[:port]/]path[:tag][@digest]. A registry is the first segment when it has a
// dot or a colon or is localhost; the tag is what follows the last colon after the last slash.
// Docker Hub's short names are written out as Kargo's Warehouses subscribe to them
// (docker.io/library/nginx), so "nginx" and "docker.io/library/nginx" are one repository.

export interface ImageRef {
  /** The repository, as a Warehouse's repoURL names it. */
  repository: string;
  tag?: string;
  digest?: string;
}

/** The repository a reference or repoURL names, in one spelling. */
export function normalizeRepository(repository: string): string {
  const [first, ...rest] = repository.split("/");
  const hasRegistry =
    rest.length > 0 && (first!.includes(".") || first!.includes(":") || first === "localhost");
  const registry = hasRegistry ? first!.toLowerCase() : "docker.io";
  const path = hasRegistry ? rest.join("/") : repository;
  const hub =
    registry === "docker.io" || registry === "index.docker.io" || registry === "registry-1.docker.io";
  if (hub) return `docker.io/${path.includes("/") ? path : `library/${path}`}`;
  return `${registry}/${path}`;
}

/** Parses an image reference; undefined for text that names no repository. */
export function parseImage(reference: string): ImageRef | undefined {
  const text = reference.trim();
  if (text === "" || /\s/.test(text)) return undefined;
  const at = text.indexOf("@");
  const digest = at >= 0 ? text.slice(at + 1) : undefined;
  const named = at >= 0 ? text.slice(0, at) : text;
  const slash = named.lastIndexOf("/");
  const colon = named.lastIndexOf(":");
  const tagged = colon > slash;
  const repository = tagged ? named.slice(0, colon) : named;
  if (repository === "" || (digest !== undefined && digest === "")) return undefined;
  return {
    repository: normalizeRepository(repository),
    ...(tagged ? { tag: named.slice(colon + 1) } : {}),
    ...(digest ? { digest } : {}),
  };
}
