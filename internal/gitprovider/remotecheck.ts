// The I/O edge of proving a GitProvider's credential: load it (secrets.ts), then ask the remote
// for a ref advertisement with it.
import type { CoreV1Api } from "@kubernetes/client-node";
import type { GitProvider } from "../../generated/v1alpha3/index.ts";
import type { GitCredential } from "../gitauth/credentials.ts";
import { probeRemote, type ProbeOutcome } from "../git/index.ts";
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

export function probeWith(
  provider: GitProvider,
  credential: GitCredential | undefined,
  options: CheckOptions,
): Promise<ProbeOutcome> {
  return probeRemote({ url: provider.spec.url, credential, ...options });
}
