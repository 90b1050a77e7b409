// The one place a WebhookClaim's Secret is read: the HMAC token that signs every request and
// every callback, and what reaching the URL may need (a CA, a client certificate, a bearer
// token). The WebhookClaim reconciler reads it to say whether the claim is Configured, the
// dispatcher to sign and send, and the callback route to check a signature; each calls this
// module, so they agree on what the Secret holds. Read from the API every time, never through an
// informer, so no key sits in a cluster-wide cache; nothing here ever logs a value.
import type { CoreV1Api } from "@kubernetes/client-node";
import type { WebhookClaim } from "../../../generated/v1alpha3/index.ts";
import { readSecret } from "../../kube/secrets.ts";
import { keyOf } from "../../types/names.ts";

/** What the claim's Secret holds, for the request and its callbacks. */
export interface WebhookSecret {
  kind: "loaded";
  /** The HMAC key: the Secret's token. */
  token: string;
  /** ca.crt: trusted for the URL beside the system's CAs. */
  ca?: string;
  /** tls.crt and tls.key: a client certificate. */
  clientCert?: { cert: string; key: string };
  /** bearerToken: sent as Authorization: Bearer. */
  bearerToken?: string;
}

/** Why the Secret cannot be used, by the reason WebhookClaim's Configured gives. */
export type WebhookSecretProblem = {
  kind: "problem";
  reason: "SecretNotFound" | "SecretInvalid";
  message: string;
};

/** namespace/name of the claim's Secret. */
export function webhookSecretOf(claim: WebhookClaim): string {
  return keyOf({ namespace: claim.metadata.namespace, name: claim.spec.secretRef.name });
}

/** The claim's Secret, read now, or why it cannot be used. */
export async function loadWebhookSecret(
  core: CoreV1Api,
  claim: WebhookClaim,
): Promise<WebhookSecret | WebhookSecretProblem> {
  const name = webhookSecretOf(claim);
  const read = await readSecret(core, claim.metadata.namespace!, claim.spec.secretRef.name);
  if (read.kind === "absent")
    return { kind: "problem", reason: "SecretNotFound", message: `Secret ${name} does not exist.` };
  if (read.kind === "forbidden") return { kind: "problem", reason: "SecretNotFound", message: read.message };
  return webhookSecretFrom(name, read.secret.data ?? {});
}

/** What a Secret's data (base64, as the API returns it) holds for a webhook, or why it cannot be used. */
export function webhookSecretFrom(
  name: string,
  data: Record<string, string>,
): WebhookSecret | WebhookSecretProblem {
  const text = (key: string) => (data[key] ? Buffer.from(data[key], "base64").toString("utf8") : undefined);
  const invalid = (message: string): WebhookSecretProblem => ({
    kind: "problem",
    reason: "SecretInvalid",
    message: `Secret ${name} ${message}`,
  });
  const token = text("token")?.trim();
  if (!token) return invalid("has no token: put the HMAC key the receiver checks under the key token.");
  const cert = text("tls.crt");
  const key = text("tls.key");
  if ((cert === undefined) !== (key === undefined))
    return invalid("holds only one of tls.crt and tls.key: a client certificate needs both.");
  const ca = text("ca.crt");
  if (ca !== undefined && !ca.includes("-----BEGIN CERTIFICATE-----"))
    return invalid("has a ca.crt that is not a PEM certificate.");
  const bearerToken = text("bearerToken")?.trim();
  return {
    kind: "loaded",
    token,
    ...(ca ? { ca } : {}),
    ...(cert && key ? { clientCert: { cert, key } } : {}),
    ...(bearerToken ? { bearerToken } : {}),
  };
}
