// One apply asked of a webhook applier: a POST of {"repository", "branch", "commit", "reason",
// "claim", "token"}, signed over the exact body (signature.ts), with the Secret's CA, client
// certificate and bearer token when it holds them. Sent once: a redirect is an answer, never
// followed (it would carry the signature and the token elsewhere), and a failure is the branch
// worker's to retry with its backoff, never this module's.
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { rootCertificates } from "node:tls";
import { errorText } from "../../telemetry/errortext.ts";
import type { WebhookSecret } from "./secret.ts";
import { sign, signatureHeader } from "./signature.ts";

/** What the applier is asked to apply. */
export interface ApplyRequest {
  /** The repository URL, as the GitProvider names it. */
  repository: string;
  branch: string;
  commit: string;
  /** Why the apply is due: ForeignCommit, Refusal, Repair or CatchUp. */
  reason: string;
  /** The WebhookClaim, as namespace/name. */
  claim: string;
  /** The operation's request token: a callback names it. */
  token: string;
}

export type PostOutcome =
  /** The applier answered 2xx. */
  | { kind: "accepted"; status: number }
  /** It answered something else: a redirect, a refusal, an error. */
  | { kind: "refused"; status: number; message: string }
  /** No answer: unreachable, a TLS failure, or past the timeout. */
  | { kind: "unreachable"; message: string };

/** How much of a refusal's body is kept for the operation's message. */
const answerLimit = 1024;

/** The body exactly as it is signed and sent. */
export function requestBody(apply: ApplyRequest): string {
  return JSON.stringify(apply);
}

/** POSTs `apply` to `url`, signed with the Secret's token; never retries, never follows a redirect. */
export function postApply(
  url: string,
  apply: ApplyRequest,
  secret: WebhookSecret,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<PostOutcome> {
  const body = requestBody(apply);
  const target = new URL(url);
  const headers: Record<string, string> = {
    "Content-Type": "application/json",
    "Content-Length": String(Buffer.byteLength(body)),
    "User-Agent": "gitops-reverser",
    [signatureHeader]: sign(body, secret.token),
    ...(secret.bearerToken ? { Authorization: `Bearer ${secret.bearerToken}` } : {}),
  };
  const tls =
    target.protocol === "https:"
      ? {
          ...(secret.ca ? { ca: [...rootCertificates, secret.ca] } : {}),
          ...(secret.clientCert ? { cert: secret.clientCert.cert, key: secret.clientCert.key } : {}),
        }
      : {};
  const send = target.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolve) => {
    const req = send(target, {
      method: "POST",
      headers,
      timeout: timeoutMs,
      ...tls,
      ...(signal ? { signal } : {}),
    });
    req.on("timeout", () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on("error", (err) => resolve({ kind: "unreachable", message: errorText(err) }));
    req.on("response", (res) => void answer(res).then(resolve));
    req.end(body);
  });
}

/** A 2xx is accepted; anything else is refused, with the start of what it said. */
async function answer(res: IncomingMessage): Promise<PostOutcome> {
  const status = res.statusCode ?? 0;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    if (size < answerLimit) chunks.push(chunk);
    size += chunk.length;
  }
  if (status >= 200 && status < 300) return { kind: "accepted", status };
  const said = Buffer.concat(chunks).toString("utf8").slice(0, answerLimit).trim();
  const location = res.headers.location ? ` to ${res.headers.location} (redirects are not followed)` : "";
  return { kind: "refused", status, message: `HTTP ${status}${location}${said ? `: ${said}` : ""}` };
}
