// The I/O edge of proving a GitProvider's credential: read its Secret, then ask the remote for a
// ref advertisement with it. The Secret is read from the API each time and never through an
// informer, so no credential sits in a cluster-wide cache; reading it on every pass is also
// what picks up a fixed or rotated credential, since nothing watches Secrets.
import type { CoreV1Api } from "@kubernetes/client-node";
import type { GitProvider } from "../../generated/v1alpha3/index.ts";
import { readGitCredential, type GitCredential } from "../gitauth/credentials.ts";
import { probeRemote, type ProbeOutcome } from "../git/probe.ts";
import { statusCodeOf } from "../kube/resourceclient.ts";

/** Why there is no credential to try. */
export type CredentialProblem =
  { kind: "secretNotFound"; secret: string } | { kind: "credentialUnreadable"; message: string };

/** What proving a provider's credential found: a problem before the remote, or its answer. */
export type RemoteCheck = CredentialProblem | ProbeOutcome;

export interface LoadedCredential {
  kind: "loaded";
  /** Undefined when spec.secretRef is omitted: the repository is reached anonymously. */
  credential: GitCredential | undefined;
  /** Changes whenever the provider's spec or its Secret changes, so a cached proof can expire. */
  fingerprint: string;
}

/** namespace/name of the provider's credential Secret, if it names one. */
export function secretOf(provider: GitProvider): string | undefined {
  const ref = provider.spec.secretRef;
  return ref ? `${provider.metadata.namespace}/${ref.name}` : undefined;
}

export async function loadCredential(
  core: CoreV1Api,
  provider: GitProvider,
): Promise<LoadedCredential | CredentialProblem> {
  const { uid, generation, namespace } = provider.metadata;
  const ref = provider.spec.secretRef;
  if (!ref) return { kind: "loaded", credential: undefined, fingerprint: `${uid}/${generation}/anonymous` };
  let secret;
  try {
    secret = await core.readNamespacedSecret({ namespace: namespace!, name: ref.name });
  } catch (err) {
    if (statusCodeOf(err) === 404) return { kind: "secretNotFound", secret: secretOf(provider)! };
    throw err;
  }
  const read = readGitCredential(secret.data, provider.spec.url);
  if ("reason" in read) return { kind: "credentialUnreadable", message: read.message };
  const { uid: secretUid, resourceVersion } = secret.metadata ?? {};
  return {
    kind: "loaded",
    credential: read,
    fingerprint: `${uid}/${generation}/${secretUid}/${resourceVersion}`,
  };
}

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
