// No-op suppression. Watch delivers every persisted write, so a status heartbeat arrives as a
// MODIFIED with a new resourceVersion; its sanitized projection is unchanged, and comparing
// projections is what tells it apart from an edit.
import type { KubernetesObject } from "@kubernetes/client-node";
import { canonicalDigest, canonicalJson } from "./digest.ts";

/**
 * What was last accepted for each object on a stream, as a digest of its sanitized projection.
 * The caller names the object by a key of its choosing, which should hold the stream and the
 * object's group, resource, namespace and name but no version, so the same object read through
 * another API version is still the same object. Only the digest is kept, never the object:
 * a stream can follow many objects.
 */
export class AcceptedState {
  private readonly digests = new Map<string, string>();

  /**
   * Whether `sanitized` is what was last accepted under `key`, so it changes nothing. What was
   * set aside beside it (the watch's unowned values, a projection's defaulted fields) counts too.
   */
  isNoop(key: string, sanitized: KubernetesObject, aside?: unknown): boolean {
    return this.digests.get(key) === digestsOf(sanitized, aside).accepted;
  }

  /**
   * Records `sanitized`, and what was set aside beside it, as the content under `key`.
   * Returns the content digest of `sanitized` alone, which the writer compares with Git's.
   */
  accept(key: string, sanitized: KubernetesObject, aside?: unknown): string {
    const { accepted, object } = digestsOf(sanitized, aside);
    this.digests.set(key, accepted);
    return object;
  }

  /**
   * Records `sanitized` under `key` unless it is what was accepted already. Returns the content
   * digest of `sanitized` when it changed anything, undefined for a no-op. The watch's hot path:
   * one canonical rendering per event.
   */
  acceptIfChanged(key: string, sanitized: KubernetesObject, aside?: unknown): string | undefined {
    const { accepted, object } = digestsOf(sanitized, aside);
    if (this.digests.get(key) === accepted) return undefined;
    this.digests.set(key, accepted);
    return object;
  }

  /** Whether anything is accepted under `key`: the object was seen and not forgotten since. */
  has(key: string): boolean {
    return this.digests.has(key);
  }

  /** Forgets `key`, as when its object is deleted; its next event is never a no-op. */
  forget(key: string): void {
    this.digests.delete(key);
  }
}

/**
 * What is accepted: the content digest of `[sanitized, aside]`, since what was set aside counts
 * too (the writer keeps the defaults a document sets), or of `sanitized` alone when nothing was
 * set aside. And the content digest of `sanitized` alone, from the same rendering.
 */
function digestsOf(sanitized: KubernetesObject, aside: unknown): { accepted: string; object: string } {
  const canonical = canonicalJson(sanitized);
  const object = canonicalDigest(canonical);
  // The canonical JSON of the pair, as contentDigest([sanitized, aside]) renders it.
  return {
    accepted: aside !== undefined ? canonicalDigest(`[${canonical},${canonicalJson(aside)}]`) : object,
    object,
  };
}
