// Image references and kustomize's images transformer: what an images: entry does to the image
// of a container, so edit-through can tell which entry produced a live image.

/** One images: entry: the image name it matches and what it sets. */
export interface ImageEntry {
  name: string;
  newName?: string;
  newTag?: string;
  digest?: string;
}

/** The fields of an images: entry that rewrite an image. */
export type ImageField = "newName" | "newTag" | "digest";
export const imageFields: readonly ImageField[] = ["newName", "newTag", "digest"];

/** An image reference split into its parts: `name[:tag][@digest]`. */
export interface ImageReference {
  name: string;
  tag?: string;
  digest?: string;
}

/** The image a chain renders from a document's image, applying each link's images: entries in order (innermost first), as kustomize does. */
export function renderImage(image: string, chain: readonly { images: readonly ImageEntry[] }[]): string {
  return traceImage(image, chain).rendered;
}

/** The rendered image, and the last entry (with its link's index) that matched on the way. */
export function traceImage<E extends ImageEntry>(
  image: string,
  chain: readonly { images: readonly E[] }[],
): { rendered: string; last?: { link: number; entry: E } } {
  let current = parseImage(image);
  let last: { link: number; entry: E } | undefined;
  for (const [link, { images }] of chain.entries()) {
    for (const entry of images) {
      if (current.name !== entry.name) continue;
      current = applyEntry(current, entry);
      last = { link, entry };
    }
  }
  return { rendered: last ? formatImage(current) : image, last };
}

/** Splits an image reference; a registry port (registry:5000/app) stays part of the name. */
export function parseImage(image: string): ImageReference {
  // The tag's colon is looked for after the last slash only, and a digest's own colon
  // (sha256:...) comes after the @.
  const at = image.indexOf("@");
  const rest = at < 0 ? image : image.slice(0, at);
  const digest = at < 0 ? undefined : image.slice(at + 1);
  const colon = rest.lastIndexOf(":");
  if (colon <= rest.lastIndexOf("/")) return { name: rest, digest };
  return { name: rest.slice(0, colon), tag: rest.slice(colon + 1), digest };
}

function formatImage({ name, tag, digest }: ImageReference): string {
  return `${name}${tag ? `:${tag}` : ""}${digest ? `@${digest}` : ""}`;
}

// As kustomize: an empty field is unset, and a new tag or digest replaces both the tag and the
// digest the image had.
function applyEntry(image: ImageReference, entry: ImageEntry): ImageReference {
  const name = entry.newName || image.name;
  if (!entry.newTag && !entry.digest) return { ...image, name };
  return { name, tag: entry.newTag || undefined, digest: entry.digest || undefined };
}
