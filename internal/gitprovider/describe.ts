// What a credential check found, in words and in when to look again. Shared by the GitProvider
// (reachability, upload-pack) and GitBranch (push session, receive-pack) controllers, so both
// explain one failure the same way. Pure, and careful: these messages land in status, which
// anyone who may read the object sees, so they name Secrets but never quote them, and show the
// URL without its user info.
import { redactUrl } from "../types/repourl.ts";
import type { RemoteCheck } from "./remotecheck.ts";

/**
 * When to check again: `steady` after a success; `blocked` when a human must change something
 * we do not watch (a Secret, the repository on the host), so we look again at a fixed pace
 * rather than hammer a Git host with a refused credential; `backoff` when the remote may
 * answer on its own later.
 */
export type Recheck = "steady" | "blocked" | "backoff";

export function recheckOf(check: RemoteCheck): Recheck {
  if (check.kind === "answered") return "steady";
  if (check.kind === "failed" && check.transient) return "backoff";
  return "blocked";
}

export interface CheckContext {
  /** spec.url, as written; only its redacted form is shown. */
  url: string;
  /** namespace/name of the GitProvider. */
  provider: string;
  /** namespace/name of its credential Secret, if spec.secretRef names one. */
  secret: string | undefined;
  /** A push session (GitBranch) rather than a ref advertisement (GitProvider). */
  forPush: boolean;
}

export function describeCheck(check: RemoteCheck, ctx: CheckContext): string {
  const url = redactUrl(ctx.url);
  const owner = ctx.forPush ? `GitProvider ${ctx.provider}'s` : "The";
  // A URL may carry its own user info; it is used, so "anonymous" would mislead.
  const inUrl = url !== ctx.url;
  const credential = ctx.secret
    ? `the credential in Secret ${ctx.secret}`
    : inUrl
      ? "the user info in spec.url"
      : "an anonymous client";
  switch (check.kind) {
    case "answered":
      return ctx.forPush
        ? `${capitalized(credential)} (GitProvider ${ctx.provider}) opened a push session on ${url}.`
        : `${url} answered a ref advertisement ${ctx.secret || inUrl ? `with ${credential}` : "anonymously"}.`;
    case "secretNotFound":
      return `${owner} credential Secret ${check.secret} (spec.secretRef) does not exist: create it, or name another.`;
    case "credentialUnreadable":
      return `${owner} credential Secret ${ctx.secret ?? ""} is not usable. ${check.message}`;
    case "refused":
      if (!ctx.secret && !inUrl) {
        return `${url} asks for a credential (${check.status} ${statusText(check.status)}), and ${ctx.forPush ? owner : "the GitProvider's"} spec.secretRef names none.`;
      }
      if (check.status === 401) {
        return `${url} did not accept ${credential} (401 Unauthorized): check its username and password, or its token.`;
      }
      return ctx.forPush
        ? `${url} refused a push session to ${credential} (403 Forbidden): it may read the repository but not push to it.`
        : `${url} refused ${credential} (403 Forbidden): the credential is valid but may not read this repository.`;
    case "notFound":
      return `${url} answered 404 Not Found: the repository does not exist, or ${credential} may not see it.`;
    case "hostKeyUnknown":
      return (
        `The SSH host key of ${check.host} is in none of the known hosts lines, and host keys are always checked: ` +
        `add the host's public key lines (ssh-keyscan ${check.host}, verified out of band) to the ConfigMap or Secret spec.knownHostsRef names, or under known_hosts in the credential Secret.`
      );
    case "failed":
      return check.transient
        ? `${url} could not be reached: ${check.detail}. Trying again with backoff.`
        : `${url} could not be checked: ${check.detail}.`;
  }
}

function capitalized(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function statusText(status: 401 | 403): string {
  return status === 401 ? "Unauthorized" : "Forbidden";
}
