// Asks a remote for its ref advertisement with a credential: the one network question the
// GitProvider and GitBranch controllers ask. The upload-pack advertisement proves the
// repository answers this credential; the receive-pack one proves the credential opens a push
// session, which a read-only credential cannot (the server refuses it before any pack is sent).
// Over HTTP that is one GET of info/refs, whose status code says why it failed; over SSH it is
// `git ls-remote` with the service asked for, through the same transport the clone uses.
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import {
  authorizationOf,
  secretValuesOf,
  type GitCredential,
  type HttpCredential,
} from "../../gitauth/credentials.ts";
import { GitCommandError, runGit } from "./gitexec.ts";
import { redactUrl } from "../../types/repourl.ts";
import { isSshUrl, withTransport } from "./transport.ts";
import { errorText } from "../../telemetry/errortext.ts";

export type ProbeOutcome =
  /** The remote advertised its refs. */
  | { kind: "answered" }
  /** The server refused the credential: 401 (not accepted) or 403 (accepted, not allowed). */
  | { kind: "refused"; status: 401 | 403 }
  /** 404: no such repository, or one this credential may not see (GitHub answers so for both). */
  | { kind: "notFound" }
  /** The SSH server's host key is in none of the known hosts lines: strict checking refused it. */
  | { kind: "hostKeyUnknown"; host: string }
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
  const { url, credential } = request;
  const signal = AbortSignal.timeout(request.timeoutMs ?? defaultTimeoutMs);
  if (isSshUrl(url)) {
    if (credential?.kind !== "ssh") {
      return {
        kind: "failed",
        transient: false,
        detail: "an SSH URL needs an SSH private key in the credential Secret",
      };
    }
    return probeSsh(request, credential, signal);
  }
  if (!/^https?:\/\//i.test(url)) {
    return { kind: "failed", transient: false, detail: "the URL is neither http(s):// nor SSH" };
  }
  if (credential?.kind === "ssh") {
    return { kind: "failed", transient: false, detail: "an SSH key cannot authenticate to an http(s) URL" };
  }
  try {
    const response = await advertisementOf(url, credential, request.forPush, signal);
    return outcomeOf(response, request.forPush, secretsOf(credential));
  } catch (err) {
    return classify(err, signal, secretsOf(credential));
  }
}

/**
 * GET info/refs for the service, with the credential on the first request: a public
 * repository answers an anonymous one, which would prove nothing about the credential.
 */
function advertisementOf(
  url: string,
  credential: HttpCredential | undefined,
  forPush: boolean,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  const service = forPush ? "git-receive-pack" : "git-upload-pack";
  const target = new URL(`${url.replace(/\/+$/, "")}/info/refs?service=${service}`);
  const headers: Record<string, string> = { "User-Agent": "git/2.39 gitops-reverser" };
  const authorization = credential && authorizationOf(credential);
  if (authorization) headers.Authorization = authorization;
  const send = target.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(target, { headers, signal, ...tlsOptionsOf(credential) }, resolve);
    req.on("error", reject);
    req.end();
  });
}

/** The CA to trust and the client certificate to show, as Node's TLS options. */
function tlsOptionsOf(credential: HttpCredential | undefined): { ca?: string; cert?: string; key?: string } {
  return {
    ...(credential?.caCert ? { ca: credential.caCert } : {}),
    ...(credential?.clientCert && credential.clientKey
      ? { cert: credential.clientCert, key: credential.clientKey }
      : {}),
  };
}

function outcomeOf(response: IncomingMessage, forPush: boolean, secrets: string[]): ProbeOutcome {
  response.resume();
  const status = response.statusCode ?? 0;
  if (status === 401 || status === 403) return { kind: "refused", status };
  if (status === 404) return { kind: "notFound" };
  if (status !== 200) {
    const text = response.statusMessage ? ` ${response.statusMessage}` : "";
    return {
      kind: "failed",
      transient: status >= 500 || status === 408 || status === 429,
      detail: scrub(`the server answered ${status}${text}`, secrets),
    };
  }
  const service = forPush ? "git-receive-pack" : "git-upload-pack";
  if (response.headers["content-type"] !== `application/x-${service}-advertisement`) {
    return {
      kind: "failed",
      transient: false,
      detail: "the URL answered, but not as a Git smart HTTP server",
    };
  }
  return { kind: "answered" };
}

/** `git ls-remote`, asking the SSH server for receive-pack when a push session is to be proved. */
async function probeSsh(
  request: ProbeRequest,
  credential: Extract<GitCredential, { kind: "ssh" }>,
  signal: AbortSignal,
): Promise<ProbeOutcome> {
  if (!credential.knownHosts) {
    return {
      kind: "failed",
      transient: false,
      detail:
        "no known_hosts lines for the SSH host: host keys are always checked, so put the host's public key lines (ssh-keyscan, verified out of band) in the ConfigMap or Secret spec.knownHostsRef names, or under known_hosts in the credential Secret",
    };
  }
  const auth = {
    kind: "ssh" as const,
    privateKey: credential.privateKey,
    knownHosts: credential.knownHosts,
    ...(credential.passphrase ? { passphrase: credential.passphrase } : {}),
  };
  const service = request.forPush ? ["--upload-pack=git-receive-pack"] : [];
  try {
    await withTransport(auth, (env) =>
      runGit(["ls-remote", "--heads", ...service, request.url], { env, signal, remote: true }),
    );
    return { kind: "answered" };
  } catch (err) {
    if (signal.aborted)
      return { kind: "failed", transient: true, detail: "the remote did not answer in time" };
    return sshOutcomeOf(err instanceof GitCommandError ? err.stderr : errorText(err), request.url);
  }
}

/** What ssh and git said, as an outcome. */
export function sshOutcomeOf(stderr: string, url: string): ProbeOutcome {
  if (/host key verification failed|host key for .* has changed|no .* host key is known/i.test(stderr)) {
    return { kind: "hostKeyUnknown", host: sshHostOf(url) };
  }
  if (/permission denied \(/i.test(stderr)) return { kind: "refused", status: 401 };
  if (
    /does not appear to be a git repository|repository .* not found|no such file or directory/i.test(stderr)
  ) {
    return { kind: "notFound" };
  }
  const noUser = /no user exists for uid (\d+)/i.exec(stderr);
  if (noUser) {
    return {
      kind: "failed",
      transient: false,
      detail: `ssh will not run as uid ${noUser[1]}, which has no passwd entry where the operator runs: run the image as its own user (65532, as the chart and config/manager do), or give that uid an entry`,
    };
  }
  // What ssh said, not git's advice after it ("Please make sure you have the correct access rights").
  const said = stderr
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !gitAdvice.some((advice) => advice.test(l)));
  const line = said.find((l) => /ssh: |connection|resolve|timed out|unreachable/i.test(l));
  return { kind: "failed", transient: true, detail: scrub(line ?? said.at(-1) ?? "ssh failed", []) };
}

/** The lines git adds to every failed SSH call, which say nothing of why it failed. */
const gitAdvice = [
  /^fatal: could not read from remote repository\.?$/i,
  /^please make sure you have the correct access rights$/i,
  /^and the repository exists\.?$/i,
];

/** The host (and port) of an SSH URL, as known_hosts names it. */
export function sshHostOf(url: string): string {
  const scheme = /^ssh:\/\/(?:[^@/]*@)?(\[[^\]]*\]|[^/:]*)(?::(\d+))?/i.exec(url);
  if (scheme) return scheme[2] && scheme[2] !== "22" ? `[${scheme[1]}]:${scheme[2]}` : scheme[1]!;
  return /^(?:[^@/]*@)?([^:/]+):/.exec(url)?.[1] ?? url;
}

/** Node's codes for a server certificate that no CA given vouches for. */
const untrustedCodes = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "CERT_UNTRUSTED",
  "CERT_SIGNATURE_FAILURE",
]);

/**
 * What a TLS error code says a human must fix, or undefined for one that is not about the
 * certificates. A server that wants a client certificate answers a missing or refused one with
 * a TLS alert: certificate required (TLS 1.3), or bad certificate, unknown CA or handshake failure.
 */
export function tlsProblemOf(code: string): string | undefined {
  if (untrustedCodes.has(code)) {
    return `the server's certificate is not trusted (${code}): put the CA that signed it under ca.crt in the credential Secret`;
  }
  if (code === "CERT_HAS_EXPIRED" || code === "CERT_NOT_YET_VALID") {
    return `the server's certificate is not valid now (${code})`;
  }
  if (code === "ERR_TLS_CERT_ALTNAME_INVALID") {
    return `the server's certificate does not name the URL's host (${code})`;
  }
  if (
    /^ERR_SSL_(TLSV13_ALERT_CERTIFICATE_REQUIRED|SSLV3_ALERT_BAD_CERTIFICATE|TLSV1_ALERT_UNKNOWN_CA|SSLV3_ALERT_HANDSHAKE_FAILURE|SSLV3_ALERT_CERTIFICATE_)/.test(
      code,
    )
  ) {
    return (
      `the server asks for a client certificate and refused the connection without one it accepts (${code}): ` +
      `put the certificate and its key under tls.crt and tls.key (Argo CD: tlsClientCertData and tlsClientCertKey) in the credential Secret`
    );
  }
  return undefined;
}

function classify(err: unknown, signal: AbortSignal, secrets: string[]): ProbeOutcome {
  if (signal.aborted) return { kind: "failed", transient: true, detail: "the remote did not answer in time" };
  const e = err as { code?: unknown } | null;
  const code = typeof e?.code === "string" ? e.code : undefined;
  const tls = code && tlsProblemOf(code);
  if (tls) return { kind: "failed", transient: false, detail: tls };
  if (code && code in transientCodes) {
    return { kind: "failed", transient: true, detail: `${transientCodes[code]} (${code})` };
  }
  const message = errorText(err);
  return { kind: "failed", transient: true, detail: scrub(message, secrets) };
}

/** The values of a credential, which no message may carry. */
function secretsOf(credential: GitCredential | undefined): string[] {
  return !credential || credential.kind === "ssh" ? [] : secretValuesOf(credential);
}

/** A message from a library, with URL user info and every credential value taken out. */
function scrub(message: string, secrets: string[]): string {
  let out = message.replace(/[A-Za-z][A-Za-z0-9+.-]*:\/\/\S+/g, (u) => redactUrl(u));
  for (const secret of secrets) out = out.split(secret).join("***");
  return out;
}
