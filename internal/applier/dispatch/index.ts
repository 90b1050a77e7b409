// The dispatchers, and this folder's face: what the applies controller starts and hears from.
// The shared dispatcher (dispatch.ts) carries out one attempt of a branch worker and follows its
// operation to the end; the Flux, Argo CD and webhook dispatchers add how their applier is asked.
export type { AnyClaim, DispatchedClaim, DispatchReport } from "./dispatch.ts";
export { FluxDispatcher } from "./fluxdispatch.ts";
export { ArgoCDDispatcher } from "./argocddispatch.ts";
export { WebhookDispatcher, type WebhookDispatcherOptions } from "./webhookdispatch.ts";
