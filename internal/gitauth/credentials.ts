// Reads a GitProvider's credential Secret. The Secret is what travels between GitOps tools, so
// the reader takes the Kubernetes-native, Flux and Argo CD key dialects: a Secret written for
// Flux or Argo CD works here unchanged. Nothing here does I/O, and no secret value ever reaches
// a message: messages end up in status conditions anyone with read access to the object sees.
// An http(s) credential is the Authorization header it sends (or none) and the TLS material
// beside it: a CA to trust and a client certificate to show. A GitHub App (githubapp.ts) is
// read here too; its header is a token fetched when a call asks for it (the one I/O this file
// starts), so it is a credential of its own kind beside those a transport sends as they are.

import { GitProviderReason } from "../../generated/v1alpha3/conditions.ts";
import {
  defaultGitHubApiUrl,
  installationTokens,
  installationTokenUsername,
  isRsaPrivateKey,
  type GitHubApp,
} from "./githubapp.ts";

/** TLS material for an https remote: a CA bundle to trust, a client certificate and its key (PEM). */
export interface HttpTls {
  caCert?: string;
  clientCert?: string;
  clientKey?: string;
}

export type GitCredential =
  | ({ kind: "basic"; username: string; password: string } & HttpTls)
  /** Sent as basic auth (basicAuthOf says how). */
  | ({ kind: "token"; token: string } & HttpTls)
  /** Sent as `Authorization: Bearer`: Flux's and Argo CD's bearerToken. */
  | ({ kind: "bearer"; token: string } & HttpTls)
  /** TLS material alone: a client certificate, or a CA for an anonymous repository. */
  | ({ kind: "tls" } & HttpTls)
  | { kind: "ssh"; privateKey: string; knownHosts?: string; passphrase?: string };

export type HttpCredential = Exclude<GitCredential, { kind: "ssh" }>;

/** A GitHub App installation: its token is fetched (and cached) before a call, never stored. */
export type GitHubAppCredential = { kind: "githubApp" } & GitHubApp;

/** What a credential Secret holds: a credential sent as it is, or a GitHub App's. */
export type SecretCredential = GitCredential | GitHubAppCredential;

/** An Authorization header's value, or how to get one for each call (a GitHub App's, which expires). */
export type Authorization = string | (() => Promise<string>);

export interface CredentialRefusal {
  reason: typeof GitProviderReason.CredentialsInvalid;
  message: string;
}

/** SSH private-key keys, first wins: Kubernetes ssh-auth, Flux, Argo CD. */
const sshKeyKeys = ["ssh-privatekey", "identity", "sshPrivateKey"];
/** CA keys, first wins: Kubernetes and Flux, then Flux's legacy caFile. */
const caKeys = ["ca.crt", "caFile"];
/** Client certificate and key keys, pairwise: Kubernetes tls and Flux, then Argo CD. */
const clientCertKeys = [
  ["tls.crt", "tls.key"],
  ["tlsClientCertData", "tlsClientCertKey"],
] as const;

/** A GitHub App's keys, the same in Flux's and Argo CD's dialects. */
const appKeys = ["githubAppID", "githubAppInstallationID", "githubAppPrivateKey"] as const;
/** The App's API base, first wins: Flux's, then Argo CD's. */
const appApiKeys = ["githubAppBaseURL", "githubAppEnterpriseBaseUrl"];

const httpKeysText =
  "username and password, token, bearerToken, password alone, a GitHub App (githubAppID, githubAppInstallationID, githubAppPrivateKey), or a client certificate in tls.crt and tls.key";
const sshKeysText = sshKeyKeys.join(", ");

/**
 * The credential in `data` (a Secret's base64 data) that fits `url`. Precedence, pinned by tests:
 * - an SSH URL takes an SSH key, `ssh-privatekey` over `identity` over `sshPrivateKey`, with
 *   Flux's `known_hosts` and `password` (the key's passphrase) beside it;
 * - an HTTP URL takes a GitHub App first, when any of `githubAppID`, `githubAppInstallationID`
 *   and `githubAppPrivateKey` is there (all three are needed), with its API at Flux's
 *   `githubAppBaseURL` or Argo CD's `githubAppEnterpriseBaseUrl` (https://api.github.com by
 *   default); then `username` and `password` as basic auth over a token: `token`, then a
 *   `password` with no `username` beside it (GitHub and GitLab access tokens are often stored
 *   so) unless the Secret holds an SSH key, whose `password` is its passphrase in Flux's
 *   dialect, then `bearerToken`, sent as a bearer token as Flux and Argo CD send it;
 * - `ca.crt` (or Flux's legacy `caFile`) and a client certificate, `tls.crt` with `tls.key`
 *   (Kubernetes tls, Flux) or `tlsClientCertData` with `tlsClientCertKey` (Argo CD), go with any
 *   HTTP kind, or make one of their own when the Secret holds nothing else; half a certificate
 *   pair is refused.
 * Blank values count as absent. Tokens are trimmed, since `echo token | base64` leaves a newline
 * that no server accepts; passwords and keys are used as written.
 */
export function readGitCredential(
  data: Record<string, string> | undefined,
  url: string,
): SecretCredential | CredentialRefusal {
  const read = (key: string): string | undefined => {
    const value = Buffer.from(data?.[key] ?? "", "base64").toString("utf8");
    return value.trim() ? value : undefined;
  };
  const firstOf = (keys: string[]): { key: string; value: string } | undefined => {
    for (const key of keys) {
      const value = read(key);
      if (value !== undefined) return { key, value };
    }
    return undefined;
  };
  const keysFound = Object.keys(data ?? {}).sort();
  const found = keysFound.length > 0 ? keysFound.join(", ") : "none";

  const sshKey = firstOf(sshKeyKeys);
  const username = read("username");
  const password = read("password");
  const basic = username && password ? { username, password } : undefined;
  const token =
    firstOf(["token"]) ??
    (!username && !sshKey && password ? { key: "password", value: password } : undefined);
  const bearer = read("bearerToken");
  const appKeysFound = appKeys.filter((key) => read(key) !== undefined);
  const httpKeys = [
    ...appKeysFound,
    ...(basic ? ["username", "password"] : []),
    ...(token ? [token.key] : []),
    ...(bearer ? ["bearerToken"] : []),
  ];

  const transport = transportOf(url);
  if (transport === undefined) {
    // The URL is not echoed: an http URL may carry a password in its user part.
    return refuse("The repository URL is neither http(s)://, ssh:// nor scp-like user@host:path.");
  }
  if (transport === "ssh") {
    if (sshKey) {
      const knownHosts = read("known_hosts");
      return {
        kind: "ssh",
        privateKey: sshKey.value,
        ...(knownHosts ? { knownHosts } : {}),
        ...(password ? { passphrase: password } : {}),
      };
    }
    if (httpKeys.length > 0) {
      return refuse(
        `The credential Secret holds HTTP credentials (${httpKeys.join(", ")}), which do not fit an SSH URL: ` +
          `use an https:// URL, or put an SSH private key under one of ${sshKeysText}.`,
      );
    }
    return refuse(
      `The credential Secret holds nothing an SSH URL can use (a non-empty ${sshKeysText}); its keys are: ${found}.`,
    );
  }

  const tls = httpTlsOf(read);
  if ("reason" in tls) return tls;
  if (appKeysFound.length > 0) return githubAppOf(read, tls);
  if (basic) return { kind: "basic", ...basic, ...tls };
  if (token) return { kind: "token", token: token.value.trim(), ...tls };
  if (bearer) return { kind: "bearer", token: bearer.trim(), ...tls };
  if (tls.caCert || tls.clientCert) return { kind: "tls", ...tls };
  if (sshKey) {
    return refuse(
      `The credential Secret holds an SSH private key (${sshKey.key}), which does not fit an http(s) URL: ` +
        `use an ssh:// or user@host:path URL, or give the Secret ${httpKeysText}.`,
    );
  }
  return refuse(
    `The credential Secret holds nothing an http(s) URL can use (${httpKeysText}, non-empty); its keys are: ${found}.`,
  );
}

/** The GitHub App a Secret names, or which of its keys is missing or unusable. */
function githubAppOf(
  read: (key: string) => string | undefined,
  tls: HttpTls,
): GitHubAppCredential | CredentialRefusal {
  const missing = appKeys.filter((key) => read(key) === undefined);
  if (missing.length > 0) {
    const owner =
      missing.includes("githubAppInstallationID") && read("githubAppInstallationOwner") !== undefined
        ? " (githubAppInstallationOwner is not read: give the installation's ID)"
        : "";
    return refuse(
      `The credential Secret holds a GitHub App without ${missing.join(" and ")}${owner}: an App needs ` +
        `${appKeys.join(", ")}.`,
    );
  }
  const appId = read("githubAppID")!.trim();
  const installationId = read("githubAppInstallationID")!.trim();
  const privateKey = read("githubAppPrivateKey")!;
  if (!/^\d+$/.test(installationId)) {
    return refuse(
      "The credential Secret's githubAppInstallationID is not a number: give the installation's numeric ID.",
    );
  }
  if (!isRsaPrivateKey(privateKey)) {
    return refuse(
      "The credential Secret's githubAppPrivateKey is not an RSA private key in PEM: give the .pem file GitHub generated for the App.",
    );
  }
  const apiKey = appApiKeys.find((key) => read(key) !== undefined);
  const apiUrl = apiKey ? read(apiKey)!.trim().replace(/\/+$/, "") : defaultGitHubApiUrl;
  if (!isPlainHttpUrl(apiUrl)) {
    // Not echoed: it may carry a password in its user part.
    return refuse(
      `The credential Secret's ${apiKey} is not an http(s) URL without user info: give the API's base, https://HOST/api/v3 for GitHub Enterprise Server.`,
    );
  }
  return { kind: "githubApp", appId, installationId, privateKey, apiUrl, ...tls };
}

function isPlainHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return /^https?:$/.test(url.protocol) && url.username === "" && url.password === "";
  } catch {
    return false;
  }
}

/** The CA and client certificate a Secret holds, or why its certificate pair cannot be used. */
function httpTlsOf(read: (key: string) => string | undefined): HttpTls | CredentialRefusal {
  const caKey = caKeys.find((key) => read(key) !== undefined);
  const ca = caKey ? { caCert: read(caKey)! } : {};
  for (const [certKey, keyKey] of clientCertKeys) {
    const clientCert = read(certKey);
    const clientKey = read(keyKey);
    if (clientCert && clientKey) return { ...ca, clientCert, clientKey };
    if (clientCert || clientKey) {
      const [has, lacks] = clientCert ? [certKey, keyKey] : [keyKey, certKey];
      return refuse(
        `The credential Secret holds ${has} but no ${lacks}: a client certificate needs both, ` +
          `the certificate and its unencrypted private key (PEM).`,
      );
    }
  }
  return ca;
}

/**
 * The Authorization header an HTTP credential sends, if any. A token goes as basic auth, as the
 * password beside the username "git", the form Flux's bootstrap writes: GitHub, GitLab, Gitea
 * and Azure DevOps all accept a token as the password with any username, where a token as the
 * username works on GitHub alone. A bearer token goes as a bearer token. A GitHub App's is a
 * function, asked before each call: the installation token as the password beside
 * `x-access-token`, fresh from the process's cache.
 */
export function authorizationOf(credential: HttpCredential): string | undefined;
export function authorizationOf(credential: HttpCredential | GitHubAppCredential): Authorization | undefined;
export function authorizationOf(credential: HttpCredential | GitHubAppCredential): Authorization | undefined {
  switch (credential.kind) {
    case "githubApp":
      return () => installationAuthorization(credential);
    case "basic":
      return basicAuthorization(credential.username, credential.password);
    case "token":
      return basicAuthorization("git", credential.token);
    case "bearer":
      return `Bearer ${credential.token}`;
    case "tls":
      return undefined;
  }
}

/** The basic Authorization header of a GitHub App installation's token, fetched if none is fresh. */
export async function installationAuthorization(app: GitHubApp): Promise<string> {
  return basicAuthorization(installationTokenUsername, await installationTokens.token(app));
}

/** The value of a basic Authorization header. */
export function basicAuthorization(username: string, password: string): string {
  return `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`;
}

/** The values of an HTTP credential no message may carry: its password or token, its key. */
export function secretValuesOf(credential: HttpCredential): string[] {
  const values = [
    ...(credential.kind === "basic" ? [credential.password] : []),
    ...(credential.kind === "token" || credential.kind === "bearer" ? [credential.token] : []),
    ...(credential.clientKey ? [credential.clientKey] : []),
  ];
  // Short values are left alone: scrubbing "ab" from every message would garble it for nothing.
  return values.filter((value) => value.length >= 4);
}

/** Which transport a Git URL names: git reads a colon before any slash, with no scheme, as scp-like SSH. */
function transportOf(url: string): "http" | "ssh" | undefined {
  if (/^https?:\/\//i.test(url)) return "http";
  if (/^ssh:\/\//i.test(url) || (!url.includes("://") && /^[^/]+:/.test(url))) return "ssh";
  return undefined;
}

function refuse(message: string): CredentialRefusal {
  return { reason: GitProviderReason.CredentialsInvalid, message };
}
