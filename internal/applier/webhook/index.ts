// The webhook applier's own parts, and this folder's face: the signature both directions carry,
// the claim's Secret, where it may send, the signed request, and the judgment of a callback.
export { sign, refuseSignature, signatureHeader } from "./signature.ts";
export {
  loadWebhookSecret,
  webhookSecretFrom,
  webhookSecretOf,
  type WebhookSecret,
  type WebhookSecretProblem,
} from "./secret.ts";
export { isLoopback, refuseUrl } from "./url.ts";
export { postApply, requestBody, type ApplyRequest, type PostOutcome } from "./request.ts";
export { callbackPrefix, judgeCallback, type CallbackFacts, type CallbackVerdict } from "./callback.ts";
