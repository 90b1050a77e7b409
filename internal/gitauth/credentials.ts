// Reads a GitProvider's credential Secret. The Secret is what travels between GitOps tools, so
// the reader takes the Kubernetes-native, Flux and Argo CD key dialects: a Secret written for
// Flux or Argo CD works here unchanged. Nothing here does I/O, and no secret value ever reaches
// a message: messages end up in status conditions anyone with read access to the object sees.

import { GitProviderReason } from "../../generated/v1alpha3/conditions.ts";

export type GitCredential =
  | { kind: "basic"; username: string; password: string; caCert?: string }
  | { kind: "token"; token: string; caCert?: string }
  | { kind: "ssh"; privateKey: string; knownHosts?: string; passphrase?: string };

export type HttpCredential = Extract<GitCredential, { kind: "basic" | "token" }>;

export interface CredentialRefusal {
  reason: typeof GitProviderReason.CredentialsInvalid;
  message: string;
}

/** SSH private-key keys, first wins: Kubernetes ssh-auth, Flux, Argo CD. */
const sshKeyKeys = ["ssh-privatekey", "identity", "sshPrivateKey"];
/** Token keys, first wins: ours, then Flux's and Argo CD's bearerToken. */
const tokenKeys = ["token", "bearerToken"];

const httpKeysText = "username and password, token, bearerToken, or password alone";
const sshKeysText = sshKeyKeys.join(", ");

/**
 * The credential in `data` (a Secret's base64 data) that fits `url`. Precedence, pinned by tests:
 * - an SSH URL takes an SSH key, `ssh-privatekey` over `identity` over `sshPrivateKey`, with
 *   Flux's `known_hosts` and `password` (the key's passphrase) beside it;
 * - an HTTP URL takes `username` and `password` as basic auth over a token: `token`, then
 *   `bearerToken`, then a `password` with no `username` beside it (GitHub and GitLab access
 *   tokens are often stored so) unless the Secret holds an SSH key, whose `password` is its
 *   passphrase in Flux's dialect;
 * - `ca.crt` (Flux) goes with either HTTP kind.
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
    firstOf(tokenKeys) ??
    (!username && !sshKey && password ? { key: "password", value: password } : undefined);
  const httpKeys = [...(basic ? ["username", "password"] : []), ...(token ? [token.key] : [])];

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

  const caCert = read("ca.crt");
  const ca = caCert ? { caCert } : {};
  if (basic) return { kind: "basic", ...basic, ...ca };
  if (token) return { kind: "token", token: token.value.trim(), ...ca };
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

/**
 * The basic auth an HTTP credential is sent as. A token goes as the password
 * beside the username "git", the form Flux's bootstrap writes: GitHub, GitLab, Gitea and Azure
 * DevOps all accept a token as the password with any username, where a token as the username
 * works on GitHub alone.
 */
export function basicAuthFor(credential: HttpCredential): { username: string; password: string } {
  return credential.kind === "basic"
    ? { username: credential.username, password: credential.password }
    : { username: "git", password: credential.token };
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
