// The fact stream: how an accepted request's facts travel from the audit ingress to the index
// of every process watching their type. The ingress appends one entry per type per request to
// its route's stream; the watch side follows the streams of the types it watches, replaying
// one retention window first, so a watch that starts after a fact arrived still finds it. Two
// transports sit behind this seam: Redis Streams (internal/redis/factstream.ts), shared by
// every replica and kept across a restart, and the in-process ring below.
import type { Fact } from "./fact.ts";

/** One audit route's stream of one type (group/resource). */
export interface StreamRef {
  route: string;
  /** group/resource, as factsByType keys it. */
  type: string;
}

export interface FactStream {
  /** Appends one request's facts of one type; rejects when the transport cannot take them. */
  append(stream: StreamRef, facts: Fact[]): Promise<void>;
  /**
   * Delivers what the stream retained, then every later append, until the returned function
   * is called. Delivery order is append order.
   */
  follow(stream: StreamRef, deliver: (facts: Fact[]) => void): () => void;
}

/** How long a stream keeps an entry for a follower that starts late: the index's TTL. */
export interface Retention {
  ms: number;
  /** The most entries one stream keeps. */
  entries: number;
}

export const streamKeyOf = (stream: StreamRef) => `${stream.route}:${stream.type}`;

interface Entry {
  at: number;
  facts: Fact[];
}

/**
 * --author-attribution-transport=memory: one ring per stream, in this process. Every fact is
 * lost on restart, by design, which is why it is refused with more than one replica.
 */
export class MemoryFactStream implements FactStream {
  private readonly rings = new Map<string, Entry[]>();
  private readonly followers = new Map<string, Set<(facts: Fact[]) => void>>();
  private appends = 0;

  constructor(
    private readonly retention: Retention,
    private readonly now: () => number = Date.now,
  ) {}

  append(stream: StreamRef, facts: Fact[]): Promise<void> {
    const key = streamKeyOf(stream);
    const ring = this.trimmed(key);
    ring.push({ at: this.now(), facts });
    if (ring.length > this.retention.entries) ring.splice(0, ring.length - this.retention.entries);
    this.rings.set(key, ring);
    // A stream nobody reads again is trimmed here, so the rings hold one window in all.
    if (++this.appends % 256 === 0) this.sweep();
    for (const deliver of this.followers.get(key) ?? []) deliver(facts);
    return Promise.resolve();
  }

  follow(stream: StreamRef, deliver: (facts: Fact[]) => void): () => void {
    const key = streamKeyOf(stream);
    for (const entry of this.trimmed(key)) deliver(entry.facts);
    const set = this.followers.get(key) ?? new Set();
    set.add(deliver);
    this.followers.set(key, set);
    return () => {
      set.delete(deliver);
      if (set.size === 0) this.followers.delete(key);
    };
  }

  private sweep(): void {
    for (const key of this.rings.keys()) if (this.trimmed(key).length === 0) this.rings.delete(key);
  }

  /** The stream's ring without the entries older than the retention window. */
  private trimmed(key: string): Entry[] {
    const ring = this.rings.get(key) ?? [];
    const horizon = this.now() - this.retention.ms;
    const firstKept = ring.findIndex((entry) => entry.at > horizon);
    if (firstKept === -1) ring.length = 0;
    else ring.splice(0, firstKept);
    return ring;
  }
}
