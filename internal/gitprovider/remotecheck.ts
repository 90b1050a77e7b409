// The I/O edge of proving a GitProvider's credential: load it (secrets.ts), then ask the remote
// for a ref advertisement with it. A GitHub App's credential is first exchanged for an
// installation token (gitauth/githubapp.ts, cached), which the probe then sends as any token;
// an exchange GitHub refuses (the App's key, or an installation that is not there) is a
// credential that cannot be used, reported as one (CredentialsInvalid) before the remote is asked.
import type { CoreV1Api } from "@kubernetes/client-node";
import type { GitProvider } from "../../generated/v1alpha3/index.ts";
import type { GitCredential, SecretCredential } from "../gitauth/credentials.ts";
import { GitHubAppError, installationTokens, installationTokenUsername } from "../gitauth/githubapp.ts";
import { probeRemote, type ProbeOutcome } from "../git/index.ts";
import { errorText } from "../telemetry/errortext.ts";
import { loadCredential, type CredentialProblem } from "./secrets.ts";

/** What proving a provider's credential found: a problem before the remote, or its answer. */
export type RemoteCheck = CredentialProblem | ProbeOutcome;

export interface CheckOptions {
  forPush: boolean;
  timeoutMs?: number;
}

/** Reads the credential and, if there is one to try, asks the remote. */
export async function checkRemote(
  core: CoreV1Api,
  provider: GitProvider,
  options: CheckOptions,
): Promise<RemoteCheck> {
  const loaded = await loadCredential(core, provider);
  if (loaded.kind !== "loaded") return loaded;
  return probeWith(provider, loaded.credential, options);
}

export async function probeWith(
  provider: GitProvider,
  credential: SecretCredential | undefined,
  options: CheckOptions,
): Promise<RemoteCheck> {
  let sent: GitCredential | undefined;
  if (credential?.kind === "githubApp") {
    const exchanged = await installationCredential(credential);
    if (!("credential" in exchanged)) return exchanged;
    sent = exchanged.credential;
  } else {
    sent = credential;
  }
  return probeRemote({ url: provider.spec.url, credential: sent, ...options });
}

/** A GitHub App's installation token as the credential git sends, or why there is none. */
async function installationCredential(
  app: Extract<SecretCredential, { kind: "githubApp" }>,
): Promise<{ credential: GitCredential } | RemoteCheck> {
  try {
    const token = await installationTokens.token(app);
    const { caCert, clientCert, clientKey } = app;
    const credential: GitCredential = {
      kind: "basic",
      username: installationTokenUsername,
      password: token,
      ...(caCert ? { caCert } : {}),
      ...(clientCert && clientKey ? { clientCert, clientKey } : {}),
    };
    return { credential };
  } catch (err) {
    // Its messages name the API's URL and the App's IDs, never the key, the JWT or a token.
    if (err instanceof GitHubAppError && err.why === "refused")
      return { kind: "credentialUnreadable", message: err.message };
    const transient = err instanceof GitHubAppError ? err.transient : true;
    return { kind: "failed", transient, detail: errorText(err).replace(/\.$/, "") };
  }
}
