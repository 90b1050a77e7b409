// No-op suppression. Watch delivers every persisted write, so a status heartbeat arrives as a
// MODIFIED with a new resourceVersion; its sanitized projection is unchanged, and comparing
// projections is what tells it apart from an edit.
import type { KubernetesObject } from "@kubernetes/client-node";
import type { Defaulted } from "./owned.ts";
import { contentDigest } from "./digest.ts";

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
   * Whether `sanitized` is what was last accepted under `key`, so it changes nothing. The
   * defaulted fields it left out count too: the writer keeps those a document sets.
   */
  isNoop(key: string, sanitized: KubernetesObject, defaulted?: Defaulted): boolean {
    return this.digests.get(key) === digestOf(sanitized, defaulted);
  }

  /** Records `sanitized`, and the defaulted fields it left out, as the content under `key`. */
  accept(key: string, sanitized: KubernetesObject, defaulted?: Defaulted): void {
    this.digests.set(key, digestOf(sanitized, defaulted));
  }

  /**
   * Records `sanitized` under `key` unless it is what was accepted already; returns whether it
   * changed anything. The watch's hot path: one digest per event.
   */
  acceptIfChanged(key: string, sanitized: KubernetesObject, defaulted?: Defaulted): boolean {
    const digest = digestOf(sanitized, defaulted);
    if (this.digests.get(key) === digest) return false;
    this.digests.set(key, digest);
    return true;
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

function digestOf(sanitized: KubernetesObject, defaulted: Defaulted | undefined): string {
  // The defaulted fields it left out count too: the writer keeps those a document sets.
  return contentDigest(defaulted ? [sanitized, defaulted] : sanitized);
}
