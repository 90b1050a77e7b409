// Reads a GitProvider's credential Secret. The Secret is what travels between GitOps tools, so
// the reader takes the Kubernetes-native, Flux and Argo CD key dialects: a Secret written for
// Flux or Argo CD works here unchanged. Nothing here does I/O, and no secret value ever reaches
// a message: messages end up in status conditions anyone with read access to the object sees.
// An http(s) credential is the Authorization header it sends (or none) and the TLS material
// beside it: a CA to trust and a client certificate to show.

import { GitProviderReason } from "../../generated/v1alpha3/conditions.ts";

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

const httpKeysText =
  "username and password, token, bearerToken, password alone, or a client certificate in tls.crt and tls.key";
const sshKeysText = sshKeyKeys.join(", ");

/**
 * The credential in `data` (a Secret's base64 data) that fits `url`. Precedence, pinned by tests:
 * - an SSH URL takes an SSH key, `ssh-privatekey` over `identity` over `sshPrivateKey`, with
 *   Flux's `known_hosts` and `password` (the key's passphrase) beside it;
 * - an HTTP URL takes `username` and `password` as basic auth over a token: `token`, then a
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
): GitCredential | CredentialRefusal {
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
  const httpKeys = [
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
 * username works on GitHub alone. A bearer token goes as a bearer token.
 */
export function authorizationOf(credential: HttpCredential): string | undefined {
  switch (credential.kind) {
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
