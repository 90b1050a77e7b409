// What a GitReceiver's status says, from what its reconcile read: its token Secret, and whether
// the operator serves a push receiver at all. Pure.
import type { GitReceiver } from "../../generated/v1alpha3/index.ts";
import { readyTrio, retryingTrio, stalledTrio, type ConditionUpdate } from "../operator/conditions.ts";
import { webhookPath } from "./auth.ts";

/**
 * The token Secret as read: absent, forbidden to the operator (the message says how to grant
 * it), or its token key's value (absent or empty: no token).
 */
export type TokenRead = { found: false; forbidden?: string } | { found: true; token?: string };

export interface ReceiverStatus {
  conditions: ConditionUpdate[];
  /** Where to deliver, once there is a token. */
  webhookPath?: string;
  /** The token deliveries are checked against, for the listener; never written to status. */
  token?: string;
}

export function receiverStatus(receiver: GitReceiver, read: TokenRead, listening: boolean): ReceiverStatus {
  const generation = receiver.metadata.generation;
  const { namespace = "", name = "" } = receiver.metadata;
  const secret = `${namespace}/${receiver.spec.secretRef.name}`;
  const validated = (status: "True" | "False", reason: string, message: string): ConditionUpdate => ({
    type: "Validated",
    status,
    reason,
    message,
    observedGeneration: generation,
  });
  if (!read.found) {
    const message = read.forbidden
      ? `${read.forbidden} It is read again every minute.`
      : `Secret ${secret} does not exist; it is read again every minute.`;
    return {
      conditions: [
        ...retryingTrio("SecretNotFound", message, generation),
        validated("False", "SecretNotFound", message),
      ],
    };
  }
  if (!read.token) {
    const message = `Secret ${secret} has no token key: put the webhook secret there.`;
    return {
      conditions: [
        ...stalledTrio("TokenMissing", message, generation),
        validated("False", "TokenMissing", message),
      ],
    };
  }
  const path = webhookPath(namespace, name, read.token);
  const ok = validated("True", "Succeeded", `Secret ${secret} holds the token.`);
  if (!listening) {
    const message =
      "The operator runs without --receiver-bind-address, so no delivery can arrive: set it, and expose that port to the Git host.";
    return {
      conditions: [...stalledTrio("ListenerDisabled", message, generation), ok],
      webhookPath: path,
      token: read.token,
    };
  }
  const message = `Deliveries to ${path} wake the branch workers of the repository they name.`;
  return {
    conditions: [...readyTrio("Succeeded", message, generation), ok],
    webhookPath: path,
    token: read.token,
  };
}
