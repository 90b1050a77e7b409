// What a GitTarget needs of its branch worker: the worker's spec, from the GitBranch and its
// GitProvider, and the target's own settings, from its spec.
import type { GitBranch, GitProvider, GitTarget } from "../../generated/v1alpha3/index.ts";
import { basicAuthFor, readGitCredential } from "../gitauth/credentials.ts";
import type { WorkerSpec } from "../git/workermanager.ts";
import type { TargetSettings } from "../git/folder/writes.ts";
import type { AppliedBy } from "../applier/owner.ts";
import { parseDuration } from "../types/units.ts";
import { readSigningKey, type SigningKey } from "../signing/sshkey.ts";
import { objectKeyOf } from "../types/names.ts";

export const defaultCommitter = { name: "GitOps Reverser", email: "noreply@configbutler.ai" };

/**
 * The window timers, prune mode and message templates a target's spec sets, with the defaults;
 * `applier`, the applier its applier claim holds, when it names one that exists.
 */
export function targetSettings(target: GitTarget, applier?: Required<AppliedBy>): TargetSettings {
  const window = target.spec.commit?.window;
  const recipients = target.spec.encryption?.age.recipients;
  return {
    key: objectKeyOf(target),
    path: target.spec.path,
    timers: {
      idleTimeoutMs: parseDuration(window?.idleTimeout ?? "5s"),
      maxDurationMs: parseDuration(window?.maxDuration ?? "1m"),
    },
    prune: target.spec.prune?.mode ?? "OnEvent",
    templates: target.spec.commit?.message,
    placement: target.spec.placement,
    ...(target.spec.suspend ? { suspend: true } : {}),
    ...(recipients && recipients.length > 0 ? { encryption: { recipients: [...recipients] } } : {}),
    ...(applier ? { applier } : {}),
  };
}

/**
 * The worker for a GitBranch, or undefined when its credential cannot be used (the GitBranch
 * reports why), or when the provider signs and its key cannot be read (SigningConfigured says
 * why): never an unsigned commit. `secret` is the GitProvider's credential Secret as read, if
 * it names one; `signing`, its signing key's text and revision.
 */
export function workerSpec(
  branch: GitBranch,
  provider: GitProvider,
  secret: { data?: Record<string, string>; resourceVersion?: string; knownHosts?: string } | undefined,
  signing?: { key?: string; resourceVersion?: string },
): WorkerSpec | undefined {
  let signingKey: SigningKey | undefined;
  if (provider.spec.commit?.signing) {
    if (!signing?.key) return undefined;
    try {
      signingKey = readSigningKey(signing.key);
    } catch {
      return undefined;
    }
  }
  let auth: WorkerSpec["auth"];
  if (provider.spec.secretRef) {
    const credential = readGitCredential(secret?.data, provider.spec.url);
    if ("reason" in credential) return undefined;
    if (credential.kind === "ssh") {
      // spec.knownHostsRef's lines over the Secret's own; without any, strict checking refuses.
      const knownHosts = secret?.knownHosts ?? credential.knownHosts;
      if (!knownHosts) return undefined;
      const { privateKey, passphrase } = credential;
      auth = { kind: "ssh", privateKey, knownHosts, ...(passphrase ? { passphrase } : {}) };
    } else {
      auth = {
        kind: "http",
        ...basicAuthFor(credential),
        ...(credential.caCert ? { caCert: credential.caCert } : {}),
      };
    }
  }
  const committer = provider.spec.commit?.committer;
  return {
    key: objectKeyOf(branch),
    uid: branch.metadata.uid!,
    url: provider.spec.url,
    branch: branch.spec.branch,
    ...(branch.spec.parentBranch ? { parentBranch: branch.spec.parentBranch } : {}),
    auth,
    committer: {
      name: committer?.name ?? defaultCommitter.name,
      email: committer?.email ?? defaultCommitter.email,
    },
    ...(signingKey ? { signingKey } : {}),
    identity: `${provider.metadata.uid}|${provider.spec.url}|${secret?.resourceVersion ?? "anonymous"}|${signing?.resourceVersion ?? "unsigned"}`,
  };
}
