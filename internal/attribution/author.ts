// The Git author of an attributed write. The committer is always the operator; the author is
// the resolved actor, named by the OIDC claims the API server mapped into user.extra or else
// by its own Kubernetes username; when attribution ran and did not resolve, it is an explicit
// sentinel, never a guessed person and never the committer.
import type { Signature, Author } from "../types/signature.ts";
import type { Actor } from "./fact.ts";
import type { Resolution } from "./resolver.ts";

export const displayNameKey = "configbutler.ai/claims/display-name";
export const emailKey = "configbutler.ai/claims/email";

export const unresolvedAuthor: Signature = {
  name: "unknown (attribution unresolved)",
  email: "attribution-unresolved@gitops-reverser.invalid",
};

/** The author a resolution names: the actor, or the unresolved sentinel. */
export function authorOf(resolution: Resolution): Author {
  return resolution.tier === "absent"
    ? { ...unresolvedAuthor, kind: "none" }
    : {
        ...actorSignature(resolution.actor),
        kind: actorKind(resolution.actor),
        username: resolution.actor.username,
      };
}

/** An actor as a Git identity: its OIDC display name and email when present and usable. */
export function actorSignature(actor: Actor): Signature {
  const name = usable(actor.extra?.[displayNameKey]?.[0]) ?? usable(actor.username) ?? "unknown";
  const claimed = usable(actor.extra?.[emailKey]?.[0]);
  const email = claimed && /^[^\s<>@]+@[^\s<>@]+$/.test(claimed) ? claimed : derivedEmail(actor.username);
  return { name, email };
}

/** Whether the actor is a service account or a person, for author_kind and actor_kind. */
export function actorKind(actor: Actor | undefined): "user" | "serviceaccount" | "none" {
  if (!actor) return "none";
  return actor.username.startsWith("system:serviceaccount:") ? "serviceaccount" : "user";
}

/** A stable address for a username, under noreply.cluster.local: what Git needs when no email is claimed. */
function derivedEmail(username: string): string {
  const local = username.replace(/[^A-Za-z0-9._-]/g, "") || "unknown";
  return `${local}@noreply.cluster.local`;
}

// Git splits identities at < and >, and a newline would end the header: neither may come through.
function usable(value: string | undefined): string | undefined {
  const text = value?.replace(/[<>\n\r]/g, "").trim();
  return text ? text : undefined;
}
