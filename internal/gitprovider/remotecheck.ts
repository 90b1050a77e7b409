// The I/O edge of proving a GitProvider's credential: read its Secret, then ask the remote for a
// ref advertisement with it. The Secret is read from the API each time and never through an
// informer, so no credential sits in a cluster-wide cache; reading it on every pass is also
// what picks up a fixed or rotated credential, since nothing watches Secrets.
import type { CoreV1Api } from "@kubernetes/client-node";
import type { GitProvider } from "../../generated/v1alpha3/index.ts";
import { readGitCredential, type GitCredential } from "../gitauth/credentials.ts";
import { probeRemote, type ProbeOutcome } from "../git/engine/probe.ts";
import { statusCodeOf } from "../kube/resourceclient.ts";
import { keyOf } from "../types/names.ts";

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
  return ref ? keyOf({ namespace: provider.metadata.namespace, name: ref.name }) : undefined;
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
  const fingerprint = `${uid}/${generation}/${secretUid}/${resourceVersion}`;
  if (read.kind !== "ssh" || !provider.spec.knownHostsRef)
    return { kind: "loaded", credential: read, fingerprint };
  const known = await readKnownHosts(core, provider);
  if (known.kind !== "found") return { kind: "credentialUnreadable", message: known.message };
  return {
    kind: "loaded",
    credential: { ...read, knownHosts: known.knownHosts },
    fingerprint: `${fingerprint}/${known.version}`,
  };
}

export type KnownHosts =
  { kind: "found"; knownHosts: string; version: string } | { kind: "missing"; message: string };

/**
 * The known_hosts lines spec.knownHostsRef names, from a ConfigMap or a Secret; they take the
 * place of the credential Secret's own known_hosts.
 */
export async function readKnownHosts(core: CoreV1Api, provider: GitProvider): Promise<KnownHosts> {
  const ref = provider.spec.knownHostsRef!;
  const key = ref.key ?? "known_hosts";
  const namespace = provider.metadata.namespace!;
  const where = `${ref.kind} ${namespace}/${ref.name}`;
  let value: string | undefined;
  let version: string;
  try {
    if (ref.kind === "ConfigMap") {
      const map = await core.readNamespacedConfigMap({ namespace, name: ref.name });
      value = map.data?.[key];
      version = `${map.metadata?.uid}/${map.metadata?.resourceVersion}`;
    } else {
      const secret = await core.readNamespacedSecret({ namespace, name: ref.name });
      const data = secret.data?.[key];
      value = data === undefined ? undefined : Buffer.from(data, "base64").toString("utf8");
      version = `${secret.metadata?.uid}/${secret.metadata?.resourceVersion}`;
    }
  } catch (err) {
    if (statusCodeOf(err) !== 404) throw err;
    return {
      kind: "missing",
      message: `The known hosts ${where} (spec.knownHostsRef) does not exist: create it.`,
    };
  }
  if (!value?.trim()) {
    return {
      kind: "missing",
      message: `The known hosts ${where} (spec.knownHostsRef) has no ${key}: put the SSH host's public key lines there.`,
    };
  }
  return { kind: "found", knownHosts: value, version };
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
