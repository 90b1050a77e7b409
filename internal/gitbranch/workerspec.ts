// The branch worker a GitBranch runs, built from the GitBranch, its GitProvider and what the
// provider's Secrets hold (internal/gitprovider/secrets.ts). A pure function: either the spec,
// or the reason there is none. Without a usable credential or signing key there is no worker,
// so nothing is ever pushed unsigned or with a credential the GitProvider has not proven; the
// GitProvider's and GitBranch's conditions tell the user what to fix.
import type { GitBranch, GitProvider } from "../../generated/v1alpha3/index.ts";
import { authorizationOf } from "../gitauth/credentials.ts";
import type { WorkerSpec } from "../git/index.ts";
import type { CredentialProblem, LoadedCredential } from "../gitprovider/secrets.ts";
import type { SigningRead } from "../gitprovider/signing.ts";
import type { SigningKey } from "../signing/key.ts";
import { openPgpSigningKey } from "../signing/openpgpkey.ts";
import { signingFormatOf } from "../signing/secret.ts";
import { readSigningKey } from "../signing/sshkey.ts";
import { objectKeyOf } from "../types/names.ts";

export const defaultCommitter = { name: "GitOps Reverser", email: "noreply@configbutler.ai" };

export type WorkerSpecOutcome = { kind: "spec"; spec: WorkerSpec } | { kind: "none"; reason: string };

/**
 * The worker for a GitBranch, or why there is none: the credential cannot be used, an SSH
 * credential has no known hosts (strict host checking refuses every host then), or the provider
 * signs and its key cannot be read. `signing` is undefined when the provider does not sign.
 */
export function workerSpec(
  branch: GitBranch,
  provider: GitProvider,
  loaded: LoadedCredential | CredentialProblem,
  signing: SigningRead | undefined,
): WorkerSpecOutcome {
  const signed = signingKeyOf(signing, provider);
  if ("reason" in signed) return { kind: "none", reason: signed.reason };
  const auth = authOf(loaded);
  if ("reason" in auth) return { kind: "none", reason: auth.reason };
  const fingerprint = (loaded as LoadedCredential).fingerprint;
  const committer = provider.spec.commit?.committer;
  return {
    kind: "spec",
    spec: {
      key: objectKeyOf(branch),
      uid: branch.metadata.uid!,
      url: provider.spec.url,
      branch: branch.spec.branch,
      ...(branch.spec.parentBranch ? { parentBranch: branch.spec.parentBranch } : {}),
      ...pushOf(branch),
      auth: auth.auth,
      committer: {
        name: committer?.name ?? defaultCommitter.name,
        email: committer?.email ?? defaultCommitter.email,
      },
      ...(signed.key ? { signingKey: signed.key } : {}),
      identity: `${provider.spec.url}|${fingerprint}|${signing?.kind === "key" ? signing.version : "unsigned"}`,
    },
  };
}

/** spec.push as the clone takes it: a review ref and push options, each only when given. */
function pushOf(branch: GitBranch): Pick<WorkerSpec, "push"> {
  const { refspec, options } = branch.spec.push ?? {};
  if (refspec === undefined && !options?.length) return {};
  return { push: { ...(refspec !== undefined ? { refspec } : {}), ...(options?.length ? { options } : {}) } };
}

function signingKeyOf(
  signing: SigningRead | undefined,
  provider: GitProvider,
): { key?: SigningKey } | { reason: string } {
  if (!signing) return {};
  if (signing.kind === "secretNotFound")
    return { reason: `the signing Secret ${signing.secret} does not exist` };
  if (signing.kind === "forbidden") return { reason: signing.message };
  if (signing.kind === "keyMissing")
    return { reason: `the signing Secret ${signing.secret} has no key ${signing.key}` };
  try {
    // An OpenPGP key is read whole at its first signature (openpgpkey.ts); what is plainly
    // unusable is refused here, so no worker is made for it.
    const key =
      signingFormatOf(provider) === "openpgp"
        ? openPgpSigningKey(signing.text, signing.passphrase)
        : readSigningKey(signing.text);
    return { key };
  } catch (err) {
    return { reason: `the signing key in ${signing.secret} cannot be read: ${(err as Error).message}` };
  }
}

function authOf(
  loaded: LoadedCredential | CredentialProblem,
): { auth: WorkerSpec["auth"] } | { reason: string } {
  if (loaded.kind === "secretNotFound")
    return { reason: `the credential Secret ${loaded.secret} does not exist` };
  if (loaded.kind === "credentialUnreadable") return { reason: loaded.message };
  const credential = loaded.credential;
  if (!credential) return { auth: undefined };
  if (credential.kind === "ssh") {
    const { privateKey, passphrase, knownHosts } = credential;
    if (!knownHosts)
      return { reason: "the SSH credential has no known_hosts, so every host would be refused" };
    return { auth: { kind: "ssh", privateKey, knownHosts, ...(passphrase ? { passphrase } : {}) } };
  }
  const authorization = authorizationOf(credential);
  const { caCert, clientCert, clientKey } = credential;
  return {
    auth: {
      kind: "http",
      ...(authorization ? { authorization } : {}),
      ...(caCert ? { caCert } : {}),
      ...(clientCert && clientKey ? { clientCert, clientKey } : {}),
    },
  };
}
