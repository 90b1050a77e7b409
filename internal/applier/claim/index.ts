// The claim holds, and this folder's face: what the reconcilers and the dispatchers use of it.
// Each claim kind's one step per pass (the FluxClaim's suspended Kustomization, the ArgoCDClaim's
// automated sync held off, the WebhookClaim's status alone) with what they say in their
// conditions, and which operations this process's dispatcher follows, so a claim ends one
// nobody follows.
export {
  claimedRef,
  decideFluxClaim,
  fluxClaimFinalizer,
  holdsApplier,
  type FluxClaimDecision,
  type FluxClaimWorld,
} from "./fluxclaim.ts";
export {
  applicationRefOf,
  argoCDClaimFinalizer,
  decideArgoCDClaim,
  holdsApplication,
  syncRefusal,
  type ArgoCDClaimDecision,
  type ArgoCDClaimWorld,
} from "./argocdclaim.ts";
export {
  decideWebhookClaim,
  holdsWebhook,
  judgeWebhookTargets,
  type WebhookClaimDecision,
  type WebhookClaimWorld,
  type WebhookSecretOutcome,
} from "./webhookclaim.ts";
export type { ClaimDecision } from "./claimstatus.ts";
export { Following } from "./following.ts";
