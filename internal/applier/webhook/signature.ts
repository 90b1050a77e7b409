// The signature a WebhookClaim's requests and callbacks carry: X-Signature: sha256=<hex HMAC-SHA256
// of the exact body>, keyed by the claim Secret's token, as Flux's generic-hmac Receiver checks it.
// One home for both directions, so what the operator sends and what it accepts cannot drift.
import { createHmac, timingSafeEqual } from "node:crypto";

/** The header both directions carry the signature in. */
export const signatureHeader = "X-Signature";

/** sha256=<hex HMAC-SHA256 of body, keyed by key>. */
export function sign(body: string | Buffer, key: string): string {
  return `sha256=${createHmac("sha256", key).update(body).digest("hex")}`;
}

/** Why a signature is refused, or undefined when it holds. Compared in constant time. */
export function refuseSignature(
  body: string | Buffer,
  header: string | undefined,
  key: string,
): string | undefined {
  if (!header) return `no ${signatureHeader} header`;
  if (!header.startsWith("sha256=")) return `${signatureHeader} is not sha256=<hex>`;
  const want = Buffer.from(sign(body, key));
  const got = Buffer.from(header);
  if (want.length !== got.length || !timingSafeEqual(want, got))
    return `${signatureHeader} does not match the body`;
  return undefined;
}
