// Attribution's wiring: the fact transport, its follower, and the audit ingress, from the
// settings cmd/flags.ts reads off --author-attribution and its flags.
import { Attribution, type AttributionSettings } from "../internal/attribution/attribution.ts";
import { defaultFactIndexLimits } from "../internal/attribution/factindex.ts";
import { MemoryFactStream } from "../internal/attribution/factstream.ts";
import { resourceTypes, type KubeProvider } from "../generated/v1alpha3/index.ts";
import { informerSource } from "../internal/kube/sources.ts";
import { auditRouteOf } from "../internal/kubeprovider/decide.ts";
import type { Manager } from "../internal/operator/manager.ts";
import type { RedisConnection } from "../internal/redis/connection.ts";
import { RedisFactStream } from "../internal/redis/factstream.ts";
import { attributionTransport } from "../internal/telemetry/instruments.ts";

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
  // Facts on an audit route no KubeProvider carries would be kept for nobody: the ingress refuses them.
  const providers = manager.informer<KubeProvider>(
    informerSource(manager.kubeConfig, resourceTypes.KubeProvider),
  );
  const carries = (route: string) =>
    providers.list().some((p) => !p.metadata.deletionTimestamp && auditRouteOf(p) === route);
  const attribution = new Attribution(settings, stream, manager.logger, carries);
  manager.addRunnable(attribution.ingress);
  return attribution;
}
