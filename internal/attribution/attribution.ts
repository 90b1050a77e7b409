// Attribution, put together: the audit ingress appends facts to the fact stream, the index
// follows the stream, and each collection watch asks the resolver who made a live change.
// The in-process transport (--author-attribution-transport=memory) is the stream: a fact the
// ingress accepts is in the index before the ingress answers.
import type { Logger } from "../operator/informer.ts";
import type { Attribute } from "../watch/collectionwatch.ts";
import type { Collection } from "../watch/watchedtypes.ts";
import { authorOf } from "./author.ts";
import { FactIndex } from "./factindex.ts";
import { AuditIngress, type AuditIngressOptions } from "./ingress.ts";
import { resolve } from "./resolver.ts";
import { attributionResolutions } from "../telemetry/instruments.ts";

export interface AttributionSettings {
  /** --author-attribution-grace: how long a live change waits for its fact. */
  graceMs: number;
  ingress: Omit<AuditIngressOptions, "append" | "logger">;
}

export class Attribution {
  readonly index = new FactIndex();
  readonly ingress: AuditIngress;
  /** When each audit route last delivered a fact, for its KubeProvider's AuditFactsReceived. */
  private readonly lastFact = new Map<string, Date>();

  constructor(
    private readonly settings: AttributionSettings,
    logger: Logger,
  ) {
    this.ingress = new AuditIngress({
      ...settings.ingress,
      logger,
      append: (route, _type, facts) => {
        for (const fact of facts) this.index.apply(fact);
        this.lastFact.set(route, new Date());
      },
    });
  }

  /** When `route` last delivered a fact; undefined before its first. */
  lastFactAt(route: string): Date | undefined {
    return this.lastFact.get(route);
  }

  /** Who made a live change of `collection`, on the audit route its KubeProvider's facts arrive on. */
  attribute(route: string, collection: Collection): Attribute {
    const { group, resource } = collection;
    return async (object) => {
      const resolution = await resolve(
        this.index,
        { route, group, resource, ...object },
        this.settings.graceMs,
      );
      const author = authorOf(resolution);
      attributionResolutions.inc({ tier: resolution.tier, actor_kind: author.kind });
      return author;
    };
  }
}
