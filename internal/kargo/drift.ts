// Drift between what Argo CD deployed and what Kargo believes a Stage holds, and the Freight
// that closes it: the observer's decisions, pure. A converged Application (every subscribed
// repository at the Stage's current tag) is a no-op, which is what keeps the observer from
// looping on its own Promotions.
import { normalizeRepository, parseImage, type ImageRef } from "./images.ts";

/** One deployed image that differs from the Stage's current Freight. */
export interface Drifted {
  repository: string;
  /** The deployed tag; a reference by digest alone has none. */
  tag?: string;
  digest?: string;
}

/** A Freight as the observer reads it. */
export interface FreightView {
  name: string;
  /** The Warehouse that produced it. */
  origin: string;
  images: ImageRef[];
  createdAt: number;
}

/**
 * The drifted images: each deployed image (`status.summary.images`) of a repository the Stage's
 * requested Warehouses subscribe to whose tag (or, without one, digest) is not the Stage's
 * current Freight's for that repository. Images of other repositories are another Stage's or
 * nobody's business, and are ignored.
 */
export function driftOf(
  deployed: readonly string[],
  current: readonly ImageRef[],
  subscribed: ReadonlySet<string>,
): Drifted[] {
  const drifted = new Map<string, Drifted>();
  for (const reference of deployed) {
    const image = parseImage(reference);
    if (!image || !subscribed.has(image.repository)) continue;
    const held = current.filter((c) => c.repository === image.repository);
    const same = held.some((c) =>
      image.tag !== undefined ? c.tag === image.tag : c.digest === image.digest,
    );
    if (same || (image.tag === undefined && image.digest === undefined)) continue;
    const pair = {
      repository: image.repository,
      ...(image.tag ? { tag: image.tag } : {}),
      ...(image.digest ? { digest: image.digest } : {}),
    };
    drifted.set(`${pair.repository}:${pair.tag ?? ""}@${pair.digest ?? ""}`, pair);
  }
  return [...drifted.values()];
}

/** Whether a Freight holds one drifted image: the same repository and tag, or digest. */
const holds = (freight: FreightView, pair: Drifted) =>
  freight.images.some(
    (image) =>
      image.repository === pair.repository &&
      (pair.tag !== undefined ? image.tag === pair.tag : image.digest === pair.digest),
  );

/**
 * The Freight that closes the drift: one of the Stage's requested origins whose images match
 * every drifted pair; the newest of several (then by name, so the choice is stable).
 */
export function matchingFreight(
  freights: readonly FreightView[],
  drifted: readonly Drifted[],
  origins: ReadonlySet<string>,
): FreightView | undefined {
  return freights
    .filter((f) => origins.has(f.origin) && drifted.every((pair) => holds(f, pair)))
    .sort((a, b) => b.createdAt - a.createdAt || a.name.localeCompare(b.name))[0];
}

/** The repositories a Warehouse's image subscriptions name. */
export function subscribedRepositories(subscriptions: readonly { image?: { repoURL?: string } }[]): string[] {
  return subscriptions.flatMap((s) => (s.image?.repoURL ? [normalizeRepository(s.image.repoURL)] : []));
}
