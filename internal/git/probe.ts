// Asks a remote for its ref advertisement with a credential: the one network question the
// GitProvider and GitBranch controllers ask. The upload-pack advertisement proves the
// repository answers this credential; the receive-pack one proves the credential opens a push
// session, which a read-only credential cannot (the server refuses it before any pack is sent).
import * as git from "isomorphic-git";
import http from "isomorphic-git/http/node";
import type { GitHttpRequest, HttpClient } from "isomorphic-git";
import { basicAuthFor, type GitCredential } from "../gitauth/credentials.ts";
import { redactUrl } from "./repourl.ts";

export type ProbeOutcome =
  /** The remote advertised its refs. */
  | { kind: "answered" }
  /** The server refused the credential: 401 (not accepted) or 403 (accepted, not allowed). */
  | { kind: "refused"; status: 401 | 403 }
  /** 404: no such repository, or one this credential may not see (GitHub answers so for both). */
  | { kind: "notFound" }
  /** Anything else. `transient` when trying again later may succeed without a human. */
  | { kind: "failed"; transient: boolean; detail: string };

export interface ProbeRequest {
  url: string;
  /** Undefined reaches the repository anonymously. */
  credential: GitCredential | undefined;
  /** Ask for the receive-pack service, which proves a push session; else upload-pack. */
  forPush: boolean;
  timeoutMs?: number;
}

const defaultTimeoutMs = 30_000;

/** Network errors that say the remote may answer later, by Node's error codes. */
const transientCodes: Record<string, string> = {
  ECONNREFUSED: "the connection was refused",
  ECONNRESET: "the connection was reset",
  ETIMEDOUT: "the connection timed out",
  EHOSTUNREACH: "the host is unreachable",
  ENETUNREACH: "the network is unreachable",
  EAI_AGAIN: "the host name could not be resolved right now",
  ENOTFOUND: "the host name does not resolve",
  EPIPE: "the connection closed early",
};

export async function probeRemote(request: ProbeRequest): Promise<ProbeOutcome> {
  const { url, credential, forPush } = request;
  if (!/^https?:\/\//i.test(url)) {
    return {
      kind: "failed",
      transient: false,
      detail: "only http(s) repositories can be reached for now: SSH is not implemented in this operator yet",
    };
  }
  if (credential?.kind === "ssh") {
    return { kind: "failed", transient: false, detail: "an SSH key cannot authenticate to an http(s) URL" };
  }
  const signal = AbortSignal.timeout(request.timeoutMs ?? defaultTimeoutMs);
  // Credentials go with the first request rather than after a 401 (isomorphic-git's onAuth):
  // a public repository answers an anonymous request, which would prove nothing about them.
  const headers: Record<string, string> = {};
  if (credential) {
    const { username, password } = basicAuthFor(credential);
    headers.Authorization = `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`;
  }
  const ca = credential?.caCert;
  const client: HttpClient = {
    request: (r: GitHttpRequest) => http.request({ ...r, signal, ...(ca ? { fetchOptions: { ca } } : {}) }),
  };
  try {
    await git.getRemoteInfo2({ http: client, url, headers, forPush, protocolVersion: 1 });
    return { kind: "answered" };
  } catch (err) {
    return classify(err, signal, secretsOf(credential));
  }
}

function classify(err: unknown, signal: AbortSignal, secrets: string[]): ProbeOutcome {
  const e = err as { code?: unknown; data?: { statusCode?: unknown; statusMessage?: unknown } } | null;
  const status = typeof e?.data?.statusCode === "number" ? e.data.statusCode : undefined;
  if (status === 401 || status === 403) return { kind: "refused", status };
  if (status === 404) return { kind: "notFound" };
  if (status !== undefined) {
    const text = typeof e?.data?.statusMessage === "string" ? ` ${e.data.statusMessage}` : "";
    return {
      kind: "failed",
      transient: status >= 500 || status === 408 || status === 429,
      detail: scrub(`the server answered ${status}${text}`, secrets),
    };
  }
  if (signal.aborted) return { kind: "failed", transient: true, detail: "the remote did not answer in time" };
  const code = typeof e?.code === "string" ? e.code : undefined;
  if (code && code in transientCodes) {
    return { kind: "failed", transient: true, detail: `${transientCodes[code]} (${code})` };
  }
  if (code === "SmartHttpError") {
    return {
      kind: "failed",
      transient: false,
      detail: "the URL answered, but not as a Git smart HTTP server",
    };
  }
  const message = err instanceof Error ? err.message : String(err);
  return { kind: "failed", transient: true, detail: scrub(message, secrets) };
}

/** The values of a credential, which no message may carry. */
function secretsOf(credential: GitCredential | undefined): string[] {
  if (!credential || credential.kind === "ssh") return [];
  // Short values are left alone: scrubbing "ab" from every message would garble it for nothing.
  const { password } = basicAuthFor(credential);
  return password.length >= 4 ? [password] : [];
}

/** A message from a library, with URL user info and every credential value taken out. */
function scrub(message: string, secrets: string[]): string {
  let out = message.replace(/[A-Za-z][A-Za-z0-9+.-]*:\/\/\S+/g, (u) => redactUrl(u));
  for (const secret of secrets) out = out.split(secret).join("***");
  return out;
}
