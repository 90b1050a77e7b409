// Attribution, put together: the audit ingress appends facts to the fact stream, each
// collection watch follows its type's stream on its provider's audit route into the index, and
// asks the resolver who made a live change. One follow per stream, counted by the watches
// that need it. With the memory transport a fact the ingress accepts is in the index before
// the ingress answers; with Redis, once the follower has read it back.
import type { Logger } from "../telemetry/logger.ts";
import type { Attributor } from "../watch/attributor.ts";
import type { Collection } from "../stream/collection.ts";
import { authorOf } from "./author.ts";
import { FactIndex, defaultFactIndexLimits, type FactIndexLimits } from "./factindex.ts";
import { streamKeyOf, type FactStream, type StreamRef } from "./factstream.ts";
import { AuditIngress, type AuditIngressOptions } from "./ingress.ts";
import { creatorRungs, resolve } from "./resolver.ts";
import type { Actor } from "./fact.ts";
import { attributionNoops, attributionResolutions, factIndexEntries } from "../telemetry/instruments.ts";

export type Transport = "redis" | "memory";

export interface AttributionSettings {
  /** --author-attribution-grace: how long a live change waits for its fact. */
  graceMs: number;
  transport: Transport;
  ingress: Omit<AuditIngressOptions, "append" | "logger" | "transport" | "carries">;
  index?: FactIndexLimits;
}

export class Attribution {
  readonly index: FactIndex;
  readonly ingress: AuditIngress;
  /** When each audit route last delivered a fact, for its KubeProvider's AuditFactsReceived. */
  private readonly lastFact = new Map<string, Date>();
  private readonly follows = new Map<string, { watches: number; stop: () => void }>();
  /** The routes whose CommitRequest stream is followed. */
  private readonly requestFollows = new Set<string>();

  constructor(
    private readonly settings: AttributionSettings,
    private readonly stream: FactStream,
    logger: Logger,
    /** Whether some KubeProvider carries an audit route (AuditIngressOptions.carries). */
    carries?: (route: string) => boolean,
  ) {
    this.index = new FactIndex(settings.index ?? defaultFactIndexLimits, Date.now, (fact) =>
      attributionNoops.inc({ audit_route: fact.route }),
    );
    this.ingress = new AuditIngress({
      ...settings.ingress,
      ...(carries ? { carries } : {}),
      transport: settings.transport,
      logger,
      append: async (route, type, facts) => {
        await stream.append({ route, type }, facts);
        this.lastFact.set(route, new Date());
      },
    });
  }

  /** When `route` last delivered a fact; undefined before its first. */
  lastFactAt(route: string): Date | undefined {
    return this.lastFact.get(route);
  }

  /** Who made a live change of `collection`, on the audit route its KubeProvider's facts arrive on. */
  attribute(route: string, collection: Collection): Attributor {
    const { group, resource } = collection;
    const release = this.follow({ route, type: `${group}/${resource}` });
    return {
      author: async (object) => {
        const resolution = await resolve(
          this.index,
          { route, group, resource, ...object },
          this.settings.graceMs,
        );
        const author = authorOf(resolution);
        attributionResolutions.inc({ tier: resolution.tier, actor_kind: author.kind });
        return author;
      },
      release,
    };
  }

  /**
   * Who created a CommitRequest, on the audit route of its GitTarget's KubeProvider: the actor
   * its create's fact names, awaited with the grace; `heard` says whether the route has
   * delivered any fact, without which a missing one proves nothing. The route's CommitRequest
   * stream is followed from the first ask on, for as long as the process runs.
   */
  async creator(
    route: string,
    request: { namespace: string; name: string; uid: string },
  ): Promise<{ actor?: Actor; heard: boolean }> {
    const scope = { route, group: "configbutler.ai", resource: "commitrequests" };
    if (!this.requestFollows.has(route)) {
      this.requestFollows.add(route);
      this.follow({ route, type: `${scope.group}/${scope.resource}` });
    }
    const query = { ...scope, ...request, resourceVersion: "", removal: false, labels: {} };
    const resolution = await resolve(this.index, query, this.settings.graceMs, creatorRungs(request.uid));
    const heard = this.lastFactAt(route) !== undefined;
    return resolution.tier === "absent" ? { heard } : { actor: resolution.actor, heard };
  }

  /** Follows a stream into the index while some watch needs it; returns that watch's release. */
  private follow(ref: StreamRef): () => void {
    const key = streamKeyOf(ref);
    let follow = this.follows.get(key);
    if (!follow) {
      const stop = this.stream.follow(ref, (facts) => {
        for (const fact of facts) this.index.apply(fact);
        factIndexEntries.set(this.index.size);
      });
      follow = { watches: 0, stop };
      this.follows.set(key, follow);
    }
    follow.watches++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--follow.watches > 0) return;
      follow.stop();
      this.follows.delete(key);
    };
  }
}
