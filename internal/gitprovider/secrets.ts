// The one place a GitProvider's Secrets are read: its credential (with the known hosts
// spec.knownHostsRef names) and its signing key. The GitProvider reconciler proves them, and the
// GitBranch reconciler reads both once per pass (loadProviderSecrets): it opens push sessions
// with the credential and builds its branch worker from the two. Each calls this module, so
// they agree on what a Secret holds and on the fingerprint that says it changed. Secrets are
// read from the API every time and never through an informer, so no credential sits in a
// cluster-wide cache; reading on every pass is also what picks up a fixed or rotated
// credential, since nothing watches Secrets.
import type { CoreV1Api } from "@kubernetes/client-node";
import type { GitProvider } from "../../generated/v1alpha3/index.ts";
import { readGitCredential, type SecretCredential } from "../gitauth/credentials.ts";
import { unlessNotFound } from "../kube/resourceclient.ts";
import { readSecret } from "../kube/secrets.ts";
import { signingKeyText, signingPassphrase, signingSecretOf } from "../signing/secret.ts";
import { keyOf } from "../types/names.ts";
import type { SigningRead } from "./signing.ts";

/** Why there is no credential to try. */
export type CredentialProblem =
  { kind: "secretNotFound"; secret: string } | { kind: "credentialUnreadable"; message: string };

export interface LoadedCredential {
  kind: "loaded";
  /**
   * Undefined when spec.secretRef is omitted: the repository is reached anonymously. A GitHub
   * App's installation tokens are not part of it: they are fetched as calls need them, so one
   * replacing another changes neither the credential nor the fingerprint.
   */
  credential: SecretCredential | undefined;
  /** Changes whenever the provider's spec or its Secrets change, so a cached proof can expire. */
  fingerprint: string;
}

/** What a GitProvider's Secrets hold, read once for one pass of a GitBranch. */
export interface ProviderSecrets {
  credential: LoadedCredential | CredentialProblem;
  /** Undefined when the provider does not sign. */
  signing: SigningRead | undefined;
}

/** The provider's credential and signing key, as the GitBranch reconciler reads them each pass. */
export async function loadProviderSecrets(core: CoreV1Api, provider: GitProvider): Promise<ProviderSecrets> {
  const [credential, signing] = await Promise.all([
    loadCredential(core, provider),
    loadSigning(core, provider),
  ]);
  return { credential, signing };
}

/** namespace/name of the provider's credential Secret, if it names one. */
export function secretOf(provider: GitProvider): string | undefined {
  const ref = provider.spec.secretRef;
  return ref ? keyOf({ namespace: provider.metadata.namespace, name: ref.name }) : undefined;
}

/** The provider's credential, with spec.knownHostsRef's lines in place of the Secret's own. */
export async function loadCredential(
  core: CoreV1Api,
  provider: GitProvider,
): Promise<LoadedCredential | CredentialProblem> {
  const { uid, generation, namespace } = provider.metadata;
  const ref = provider.spec.secretRef;
  if (!ref) return { kind: "loaded", credential: undefined, fingerprint: `${uid}/${generation}/anonymous` };
  const secretRead = await readSecret(core, namespace!, ref.name);
  if (secretRead.kind === "absent") return { kind: "secretNotFound", secret: secretOf(provider)! };
  if (secretRead.kind === "forbidden") return { kind: "credentialUnreadable", message: secretRead.message };
  const { secret } = secretRead;
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
  const read =
    ref.kind === "ConfigMap"
      ? unlessNotFound(core.readNamespacedConfigMap({ namespace, name: ref.name })).then(
          (map) => map && { value: map.data?.[key], metadata: map.metadata },
        )
      : readSecret(core, namespace, ref.name).then((read) => {
          if (read.kind !== "found") return read.kind === "forbidden" ? read : undefined;
          const data = read.secret.data?.[key];
          return {
            value: data === undefined ? undefined : Buffer.from(data, "base64").toString("utf8"),
            metadata: read.secret.metadata,
          };
        });
  const found = await read;
  if (found && "kind" in found) return { kind: "missing", message: found.message };
  if (!found) {
    return {
      kind: "missing",
      message: `The known hosts ${where} (spec.knownHostsRef) does not exist: create it.`,
    };
  }
  if (!found.value?.trim()) {
    return {
      kind: "missing",
      message: `The known hosts ${where} (spec.knownHostsRef) has no ${key}: put the SSH host's public key lines there.`,
    };
  }
  return {
    kind: "found",
    knownHosts: found.value,
    version: `${found.metadata?.uid}/${found.metadata?.resourceVersion}`,
  };
}

/** What spec.commit.signing's Secret holds, as read; undefined when the provider does not sign. */
export async function loadSigning(core: CoreV1Api, provider: GitProvider): Promise<SigningRead | undefined> {
  const where = signingSecretOf(provider);
  if (!where) return undefined;
  const read = await readSecret(core, provider.metadata.namespace!, where.name);
  if (read.kind === "absent") return { kind: "secretNotFound", secret: where.name };
  if (read.kind === "forbidden") return { kind: "forbidden", secret: where.name, message: read.message };
  const { secret } = read;
  const text = signingKeyText(secret.data, where.key);
  const passphrase = signingPassphrase(secret.data);
  return text === undefined
    ? { kind: "keyMissing", secret: where.name, key: where.key }
    : {
        kind: "key",
        secret: where.name,
        key: where.key,
        text,
        ...(passphrase !== undefined ? { passphrase } : {}),
        version: `${secret.metadata?.uid}/${secret.metadata?.resourceVersion}`,
      };
}
