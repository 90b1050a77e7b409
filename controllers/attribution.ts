// --author-attribution and its flags, as the settings the operator's wiring takes. What the
// flags cannot start with is refused at startup, saying which flag to change.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { AttributionSettings } from "../internal/attribution/attribution.ts";
import { parseBindAddress } from "../internal/telemetry/servers.ts";
import type { OperatorOptions } from "./flags.ts";

export function attributionSettings(options: OperatorOptions): AttributionSettings | undefined {
  if (!options.authorAttribution) return undefined;
  if (options.authorAttributionTransport === "redis") {
    throw new Error(
      "--author-attribution-transport=redis is not available yet: run with --author-attribution-transport=memory (one replica) or --author-attribution=false",
    );
  }
  if (options.replicaCount !== 1) {
    throw new Error(
      `--author-attribution-transport=memory keeps facts in one process and is refused with --replica-count=${options.replicaCount}`,
    );
  }
  const address = parseBindAddress(options.auditBindAddress);
  if (!address) throw new Error("--audit-bind-address=0: attribution needs its audit ingress");
  const read = (file: string) => readFileSync(join(options.auditCertDir, file), "utf8");
  return {
    graceMs: options.authorAttributionGrace,
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
