// A GitHub App as a Git credential: the App's private key signs a short JWT (RS256; iat a
// minute back for clock drift, exp nine minutes ahead, iss the App's ID), the JWT is exchanged
// at POST {api}/app/installations/{id}/access_tokens for an installation token, and git sends
// that token as the password beside the username `x-access-token`. The default API is
// https://api.github.com; GitHub Enterprise Server's is https://HOST/api/v3, named by the
// Secret. Tokens live an hour, so they are cached per App, installation, API and key
// (InstallationTokens) and fetched again a margin before they expire: five minutes, never more
// than half the token's life. A long-lived branch worker cannot hold one token, so its
// transport carries a function instead of a header value (authorizationOf in credentials.ts),
// asked before every git call that talks to the remote (engine/transport.ts): each push, fetch
// and ls-remote gets a token from this cache, which is the smallest design that keeps a worker
// running across token rotations without a helper process or a file on disk. The exchange's
// refusals are named: a 401 is the App's key refused, a 404 an installation that does not
// exist for the App. No message carries the key, the JWT or a token.
import { createHash, createPrivateKey, sign, type KeyObject } from "node:crypto";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { errorText } from "../telemetry/errortext.ts";

/** GitHub's public API: what the exchange reaches when the Secret names no other. */
export const defaultGitHubApiUrl = "https://api.github.com";

/** The username git sends beside an installation token, as GitHub's documentation has it. */
export const installationTokenUsername = "x-access-token";

/** An App installation, as a credential Secret names it, with the TLS material for its API and Git host. */
export interface GitHubApp {
  /** The App's ID (or client ID): the JWT's issuer. */
  appId: string;
  /** The installation's numeric ID. */
  installationId: string;
  /** The App's private key, PEM (GitHub's download is PKCS#1 RSA). */
  privateKey: string;
  /** The REST API's base, without a trailing slash. */
  apiUrl: string;
  caCert?: string;
  clientCert?: string;
  clientKey?: string;
}

/** An installation token as the exchange answered it. */
export interface IssuedToken {
  token: string;
  /** When it expires, in ms since the epoch. */
  expiresAt: number;
  /** When it was fetched, in ms since the epoch. */
  fetchedAt: number;
}

/**
 * Why no token could be had: GitHub `refused` what the Secret names (its key, its installation,
 * its API URL), or the API could not be reached. `transient` when asking again later may
 * succeed without a human (a timeout, a 5xx); otherwise the Secret or the App must change.
 */
export class GitHubAppError extends Error {
  constructor(
    message: string,
    readonly why: "refused" | "unreachable",
    readonly transient: boolean,
  ) {
    super(message);
  }
}

/** The App's JWT at `nowMs`: RS256 over {iat, exp, iss}, as GitHub's documentation asks. */
export function appJwt(appId: string, privateKey: string | KeyObject, nowMs: number): string {
  const now = Math.floor(nowMs / 1000);
  const header = { alg: "RS256", typ: "JWT" };
  // iat a minute back for clock drift; exp at most ten minutes ahead, nine to leave room for it.
  const claims = { iat: now - 60, exp: now + 9 * 60, iss: appId };
  const data = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(claims))}`;
  const key = typeof privateKey === "string" ? createPrivateKey(privateKey) : privateKey;
  return `${data}.${sign("sha256", Buffer.from(data), key).toString("base64url")}`;
}

/** Whether `pem` is a private key GitHub's JWT can be signed with: an RSA key, unencrypted PEM. */
export function isRsaPrivateKey(pem: string): boolean {
  try {
    return createPrivateKey(pem).asymmetricKeyType === "rsa";
  } catch {
    return false;
  }
}

const exchangeTimeoutMs = 30_000;

/** POSTs the App's JWT for an installation token. Throws GitHubAppError, naming what went wrong. */
export async function exchangeInstallationToken(
  app: GitHubApp,
  nowMs = Date.now(),
  timeoutMs = exchangeTimeoutMs,
): Promise<IssuedToken> {
  const target = new URL(
    `${app.apiUrl}/app/installations/${encodeURIComponent(app.installationId)}/access_tokens`,
  );
  const where = `${target.origin}${target.pathname}`;
  const jwt = appJwt(app.appId, app.privateKey, nowMs);
  const signal = AbortSignal.timeout(timeoutMs);
  let response: { status: number; body: string };
  try {
    response = await post(target, jwt, app, signal);
  } catch (err) {
    throw unreachable(err, where, signal);
  }
  const said = githubMessageOf(response.body, jwt);
  const answer = `${response.status}${said ? ` "${said}"` : ""} from ${where}`;
  const about = `GitHub App ${app.appId}`;
  if (response.status === 201 || response.status === 200) {
    const issued = tokenOf(response.body);
    if (!issued)
      throw new GitHubAppError(
        `${about}: ${where} answered without a token and its expiry.`,
        "unreachable",
        true,
      );
    return { ...issued, fetchedAt: nowMs };
  }
  if (response.status === 401) {
    throw new GitHubAppError(
      `${about}: the App's private key was refused (${answer}): check githubAppID, and that githubAppPrivateKey is one of the App's current private keys.`,
      "refused",
      false,
    );
  }
  if (response.status === 404 && said !== undefined) {
    throw new GitHubAppError(
      `${about}: installation ${app.installationId} does not exist or is not installed for this App (${answer}): check githubAppInstallationID, the number in the installation's settings URL.`,
      "refused",
      false,
    );
  }
  if (response.status === 404) {
    throw new GitHubAppError(
      `${about}: ${where} answered 404 without GitHub's API behind it: GitHub Enterprise Server's API is https://HOST/api/v3.`,
      "refused",
      false,
    );
  }
  if (response.status === 403) {
    throw new GitHubAppError(
      `${about}: the installation token was refused (${answer}): the installation may be suspended, or the App's permissions not granted.`,
      "refused",
      false,
    );
  }
  const transient = response.status >= 500 || response.status === 408 || response.status === 429;
  throw new GitHubAppError(
    `${about}: the installation token request answered ${answer}.`,
    transient ? "unreachable" : "refused",
    transient,
  );
}

function post(
  target: URL,
  jwt: string,
  app: GitHubApp,
  signal: AbortSignal,
): Promise<{ status: number; body: string }> {
  const send = target.protocol === "https:" ? httpsRequest : httpRequest;
  const headers = {
    Accept: "application/vnd.github+json",
    Authorization: `Bearer ${jwt}`,
    "X-GitHub-Api-Version": "2022-11-28",
    "User-Agent": "gitops-reverser",
    "Content-Length": "0",
  };
  const tls = {
    ...(app.caCert ? { ca: app.caCert } : {}),
    ...(app.clientCert && app.clientKey ? { cert: app.clientCert, key: app.clientKey } : {}),
  };
  return new Promise((resolve, reject) => {
    const req = send(target, { method: "POST", headers, signal, ...tls }, (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (chunk: Buffer) => {
        // An answer is a few hundred bytes: more is not GitHub's, and is not kept.
        if ((size += chunk.length) <= 64 * 1024) chunks.push(chunk);
      });
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }),
      );
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

/** The token and its expiry in a 201 answer, if it holds them. */
function tokenOf(body: string): { token: string; expiresAt: number } | undefined {
  try {
    const parsed = JSON.parse(body) as { token?: unknown; expires_at?: unknown };
    const expiresAt = typeof parsed.expires_at === "string" ? Date.parse(parsed.expires_at) : NaN;
    if (typeof parsed.token !== "string" || parsed.token === "" || Number.isNaN(expiresAt)) return undefined;
    return { token: parsed.token, expiresAt };
  } catch {
    return undefined;
  }
}

/** The `message` of a GitHub API error answer: undefined when the body is not GitHub's JSON. */
function githubMessageOf(body: string, jwt: string): string | undefined {
  try {
    const parsed = JSON.parse(body) as { message?: unknown };
    if (typeof parsed?.message !== "string") return undefined;
    return parsed.message.split(jwt).join("***").slice(0, 200);
  } catch {
    return undefined;
  }
}

function unreachable(err: unknown, where: string, signal: AbortSignal): GitHubAppError {
  if (signal.aborted)
    return new GitHubAppError(
      `${where} did not answer the installation token request in time.`,
      "unreachable",
      true,
    );
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === "string" && /CERT|^ERR_SSL_|^ERR_TLS_/.test(code)) {
    return new GitHubAppError(
      `${where} could not be reached over TLS (${code}): for a private CA, put it under ca.crt in the credential Secret.`,
      "unreachable",
      false,
    );
  }
  const reason = typeof code === "string" ? code : errorText(err);
  return new GitHubAppError(`${where} could not be reached: ${reason}.`, "unreachable", true);
}

export interface InstallationTokensOptions {
  /** How long before a token expires a new one is fetched: five minutes unless a test says. */
  marginMs?: number;
  now?: () => number;
  /** Fetches a token: the real exchange unless a test gives another. */
  exchange?: (app: GitHubApp, nowMs: number) => Promise<IssuedToken>;
}

/** How long a token still used after a failed refresh must have left. */
const fallbackMinMs = 30_000;

/**
 * Installation tokens, cached per API, App, installation and private key, and shared by every
 * caller in the process: the GitProvider's probe, the GitBranch's push-session proof and each
 * worker's git calls. Calls that find no fresh token at once share one exchange.
 */
export class InstallationTokens {
  /** How long before expiry a token is replaced; never more than half its life. */
  marginMs: number;
  private readonly now: () => number;
  private readonly exchange: (app: GitHubApp, nowMs: number) => Promise<IssuedToken>;
  private readonly cached = new Map<string, IssuedToken>();
  private readonly pending = new Map<string, Promise<IssuedToken>>();

  constructor(options: InstallationTokensOptions = {}) {
    this.marginMs = options.marginMs ?? 5 * 60_000;
    this.now = options.now ?? Date.now;
    this.exchange = options.exchange ?? ((app, nowMs) => exchangeInstallationToken(app, nowMs));
  }

  /** A token for `app` that is not within the margin of its expiry; fetched when none is. */
  async token(app: GitHubApp): Promise<string> {
    const key = cacheKeyOf(app);
    const held = this.cached.get(key);
    const now = this.now();
    if (held && now < this.replaceAt(held)) return held.token;
    try {
      return (await this.fetch(key, app)).token;
    } catch (err) {
      // GitHub's API down for a moment does not stop a push while the token in hand still works.
      if (held && err instanceof GitHubAppError && err.transient && now < held.expiresAt - fallbackMinMs)
        return held.token;
      throw err;
    }
  }

  /** When a token is replaced: the margin before it expires, at most half its life. */
  replaceAt(token: IssuedToken): number {
    const life = token.expiresAt - token.fetchedAt;
    return token.expiresAt - Math.min(this.marginMs, Math.max(life, 0) / 2);
  }

  /** Drops every cached token. */
  clear(): void {
    this.cached.clear();
  }

  private fetch(key: string, app: GitHubApp): Promise<IssuedToken> {
    const inFlight = this.pending.get(key);
    if (inFlight) return inFlight;
    const fetching = this.exchange(app, this.now())
      .then((issued) => {
        const now = this.now();
        // Expired tokens are not kept: a token lives in memory no longer than it is of use.
        for (const [k, t] of this.cached) if (t.expiresAt <= now) this.cached.delete(k);
        this.cached.set(key, issued);
        return issued;
      })
      .finally(() => this.pending.delete(key));
    this.pending.set(key, fetching);
    return fetching;
  }
}

/** The process's installation tokens. */
export const installationTokens = new InstallationTokens();

/** Cached tokens are keyed by the key's hash too: a replaced key is proven on its first use. */
function cacheKeyOf(app: GitHubApp): string {
  const keyHash = createHash("sha256").update(app.privateKey).digest("hex").slice(0, 16);
  return `${app.apiUrl}|${app.appId}|${app.installationId}|${keyHash}`;
}

function base64url(text: string): string {
  return Buffer.from(text).toString("base64url");
}
