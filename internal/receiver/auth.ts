// How a push delivery is authenticated, per GitReceiver spec.type, with the semantics of Flux's
// Receiver of the same name where Flux has one (its bitbucket type is checked as Bitbucket Data
// Center signs, which is also how Bitbucket Cloud signs). A token header (gitlab) or basic auth
// (azure-devops) is judged from the headers alone, before a byte of the body is read; an HMAC
// type refuses a missing or malformed signature from the headers too, and checks the signature
// over the exact bytes received before anything parses them. A host that sends no signature
// when its webhook has no secret (Bitbucket) is refused like any unsigned delivery: a
// GitReceiver always has a token. Every comparison is constant-time.
import { createHmac, timingSafeEqual } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";

/** Every spec.type, in the order the API lists them. */
export const receiverTypes = [
  "github",
  "gitlab",
  "gitea",
  "generic-hmac",
  "bitbucket",
  "bitbucket-server",
  "azure-devops",
  "gogs",
  "forgejo",
] as const;

export type ReceiverType = (typeof receiverTypes)[number];

/** What the headers alone decide: refused, accepted, or a signature the body must match. */
export type HeaderVerdict =
  | { kind: "refused"; why: string }
  | { kind: "accepted" }
  | { kind: "signed"; algorithm: "sha1" | "sha256" | "sha512"; signature: Buffer };

const header = (headers: IncomingHttpHeaders, name: string): string | undefined => {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/** "sha256=<hex>" and the like: the algorithm a signature names, and its bytes. */
function prefixed(value: string | undefined, allowed: readonly string[]): HeaderVerdict {
  const match = /^(sha1|sha256|sha512)=([0-9a-fA-F]+)$/.exec(value ?? "");
  if (!match || !allowed.includes(match[1]!)) return { kind: "refused", why: "no usable signature header" };
  return {
    kind: "signed",
    algorithm: match[1] as "sha1" | "sha256" | "sha512",
    signature: Buffer.from(match[2]!, "hex"),
  };
}

/** The bare hex HMAC-SHA256 Gitea, Gogs and Forgejo send, with no algorithm prefix. */
function bareHex(headers: IncomingHttpHeaders, name: string): HeaderVerdict {
  const value = header(headers, name) ?? "";
  if (!/^[0-9a-fA-F]{64}$/.test(value)) return { kind: "refused", why: `no usable ${name}` };
  return { kind: "signed", algorithm: "sha256", signature: Buffer.from(value, "hex") };
}

/**
 * Basic auth whose password is the token, whatever the user name: Azure DevOps' service hooks
 * send the user name and password entered in the hook as `Authorization: Basic`.
 */
function basicPassword(value: string | undefined, token: string): HeaderVerdict {
  const match = /^basic\s+([A-Za-z0-9+/=_-]+)\s*$/i.exec(value ?? "");
  const decoded = match ? Buffer.from(match[1]!, "base64").toString("utf8") : "";
  const colon = decoded.indexOf(":");
  if (colon < 0) return { kind: "refused", why: "no basic auth in Authorization" };
  return equalSecret(decoded.slice(colon + 1), token)
    ? { kind: "accepted" }
    : { kind: "refused", why: "the basic auth password is not the token" };
}

/** The verdict the headers give, for a receiver of `type` whose token is `token`. */
export function judgeHeaders(type: ReceiverType, headers: IncomingHttpHeaders, token: string): HeaderVerdict {
  switch (type) {
    case "github":
      return prefixed(header(headers, "x-hub-signature-256"), ["sha256"]);
    case "gitea":
      return bareHex(headers, "x-gitea-signature");
    case "gogs":
      return bareHex(headers, "x-gogs-signature");
    case "forgejo":
      return bareHex(headers, "x-forgejo-signature");
    case "bitbucket":
    case "bitbucket-server":
      // Both sign X-Hub-Signature: sha256=<hex>, and send none when the hook has no secret.
      return prefixed(header(headers, "x-hub-signature"), ["sha256"]);
    case "generic-hmac":
      return prefixed(header(headers, "x-signature"), ["sha1", "sha256", "sha512"]);
    case "gitlab":
      return equalSecret(header(headers, "x-gitlab-token") ?? "", token)
        ? { kind: "accepted" }
        : { kind: "refused", why: "X-Gitlab-Token does not match" };
    case "azure-devops":
      return basicPassword(header(headers, "authorization"), token);
  }
}

/** Whether the body's HMAC under the token is the signature the headers carried. */
export function signatureHolds(
  verdict: Extract<HeaderVerdict, { kind: "signed" }>,
  body: Buffer,
  token: string,
): boolean {
  const expected = createHmac(verdict.algorithm, token).update(body).digest();
  return expected.length === verdict.signature.length && timingSafeEqual(expected, verdict.signature);
}

/** Two secrets compared in constant time, whatever their lengths: both are hashed first. */
function equalSecret(given: string, token: string): boolean {
  const digest = (text: string) => createHmac("sha256", "gitops-reverser").update(text).digest();
  return token !== "" && timingSafeEqual(digest(given), digest(token));
}

/**
 * A GitReceiver's webhook path: the hex HMAC-SHA256 of its namespace/name keyed by its token, so
 * the path names no provider and changes when the token does.
 */
export function webhookPath(namespace: string, name: string, token: string): string {
  return `/git-push/${createHmac("sha256", token).update(`${namespace}/${name}`).digest("hex")}`;
}
