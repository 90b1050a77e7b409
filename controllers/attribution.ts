// --author-attribution and its flags, as the settings the operator's wiring takes, and the
// wiring itself: the fact transport, its follower, and the audit ingress. What the flags
// cannot start with is refused at startup, saying which flag to change.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Attribution, type AttributionSettings } from "../internal/attribution/attribution.ts";
import { defaultFactIndexLimits } from "../internal/attribution/factindex.ts";
import { MemoryFactStream } from "../internal/attribution/factstream.ts";
import type { Manager } from "../internal/operator/manager.ts";
import type { RedisConnection } from "../internal/redis/connection.ts";
import { RedisFactStream } from "../internal/redis/factstream.ts";
import { attributionTransport } from "../internal/telemetry/instruments.ts";
import { parseBindAddress } from "../internal/telemetry/servers.ts";
import type { OperatorOptions } from "./flags.ts";

export function attributionSettings(options: OperatorOptions): AttributionSettings | undefined {
  if (!options.authorAttribution) return undefined;
  const transport = options.authorAttributionTransport;
  if (transport === "redis" && !options.redisAddr) {
    throw new Error(
      "--author-attribution-transport=redis keeps audit facts in Redis and needs --redis-addr: set it, or run with --author-attribution-transport=memory (one replica) or --author-attribution=false",
    );
  }
  if (transport === "memory" && options.replicaCount !== 1) {
    throw new Error(
      `--author-attribution-transport=memory keeps facts in one process and is refused with --replica-count=${options.replicaCount}`,
    );
  }
  const address = parseBindAddress(options.auditBindAddress);
  if (!address) throw new Error("--audit-bind-address=0: attribution needs its audit ingress");
  const read = (file: string) => readFileSync(join(options.auditCertDir, file), "utf8");
  return {
    graceMs: options.authorAttributionGrace,
    transport,
    ingress: {
      ...address,
      ...(options.auditInsecure
        ? {}
        : { tls: { cert: read("tls.crt"), key: read("tls.key"), ca: read("ca.crt") } }),
      ...(options.authorAttributionAuditRouteAnnotationKey
        ? { routeAnnotationKey: options.authorAttributionAuditRouteAnnotationKey }
        : {}),
    },
  };
}

/** Attribution on its transport: the streams live one index TTL, capped per stream as the index is. */
export function setupAttribution(
  manager: Manager,
  settings: AttributionSettings,
  redis: RedisConnection | undefined,
): Attribution {
  const limits = settings.index ?? defaultFactIndexLimits;
  const retention = { ms: limits.ttlMs, entries: limits.perType };
  let stream;
  if (settings.transport === "redis") {
    if (!redis) throw new Error("--author-attribution-transport=redis needs --redis-addr");
    stream = new RedisFactStream(redis, retention, manager.logger);
    manager.addRunnable(stream);
  } else {
    stream = new MemoryFactStream(retention);
  }
  attributionTransport.set({ transport: settings.transport }, 1);
  const attribution = new Attribution(settings, stream, manager.logger);
  manager.addRunnable(attribution.ingress);
  return attribution;
}
