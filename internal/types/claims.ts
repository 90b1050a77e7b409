// An applier claim, by kind. A FluxClaim, an ArgoCDClaim and a WebhookClaim may share a name in one namespace,
// so everything keyed by claim (the worker's decisions, its apply windows) keys by kind too.
import type { NamespacedName } from "./names.ts";

export type ClaimKind = "FluxClaim" | "ArgoCDClaim" | "WebhookClaim";

export interface ClaimRef extends NamespacedName {
  kind: ClaimKind;
}

/** The key a claim is filed under: kind, namespace and name. */
export const claimKey = (claim: ClaimRef): string => `${claim.kind}/${claim.namespace}/${claim.name}`;
