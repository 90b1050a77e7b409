// The WebhookClaim reconciler's decision, from what it read. Unlike the FluxClaim and the
// ArgoCDClaim, a WebhookClaim holds nothing in a cluster: no applier is suspended, no finalizer
// guards a hand-back. Its tool applies only when a branch worker's dispatcher POSTs to spec.url,
// so the claim says whether it may be asked (its URL, its Secret, a GitTarget that names it and
// whose writes are known) and how the operation in flight stands, and ends one nobody follows.
// It writes status alone.
import type { ApplyOperation, WebhookClaim } from "../../../generated/v1alpha3/index.ts";
import {
  WebhookClaimCondition as C,
  WebhookClaimReason as R,
} from "../../../generated/v1alpha3/conditions.ts";
import { progressingTrio, readyTrio, stalledTrio, type ConditionUpdate } from "../../operator/conditions.ts";
import { keyOf } from "../../types/names.ts";
import { failed, inFlight, type ReferringTarget, type Verdict } from "../decide/index.ts";
import {
  boundNames,
  conditionsOf,
  configuredAt,
  type ClaimDecision,
  type ClaimFacts,
  type EventNote,
} from "./claimstatus.ts";
import { unfollowedGraceMs } from "./following.ts";

/**
 * What reading the claim's Secret came to, as internal/applier/webhook/secret.ts says it: loaded
 * (what it holds is the dispatcher's business, so no key ever reaches a decision), or why not.
 */
export type WebhookSecretOutcome =
  { kind: "loaded" } | { kind: "problem"; reason: "SecretNotFound" | "SecretInvalid"; message: string };

export interface WebhookClaimWorld {
  claim: WebhookClaim;
  now: Date;
  /** Who names the claim (judgeWebhookTargets). */
  verdict: Verdict;
  /** The Secret as read; undefined when it was not read (nothing names the claim). */
  secret?: WebhookSecretOutcome;
  /** Why spec.url may not be sent to (internal/applier/webhook/url.ts), or undefined when it may. */
  urlRefusal?: string;
  /** How long a branch worker's operation in flight has gone unfollowed by this process; 0 while followed. */
  unfollowedMs?: number;
}

/** A WebhookClaim writes nothing but its status. */
export type WebhookStep = { kind: "none" };

export type WebhookClaimDecision = ClaimDecision<WebhookStep>;

/**
 * Eligibility without a KubeProvider or an applier's source: nothing names the claim, or some
 * GitTarget naming it (the caller passes those in its namespace, not being deleted) has its
 * writes known, or none does yet because its GitBranch or GitProvider cannot be read.
 */
export function judgeWebhookTargets(targets: readonly ReferringTarget[]): Verdict {
  if (targets.length === 0) return { kind: "notReferenced" };
  const known = targets.filter((t) => t.writes);
  if (known.length > 0) return { kind: "bound", targets: known };
  return {
    kind: "pending",
    reason: R.NotBound,
    message: `No GitTarget naming this claim is eligible yet: the GitBranch or GitProvider of ${targets.map((t) => keyOf(t.ref)).join(", ")} cannot be read.`,
  };
}

export function decideWebhookClaim(world: WebhookClaimWorld): WebhookClaimDecision {
  const configured = configuredCondition(world);
  const unfollowed = endUnfollowed(world);
  const asked = configured.status === "True" && !world.claim.metadata.deletionTimestamp;
  const decision = asked ? inControl(world, configured, unfollowed) : idle(world, configured);
  const event = unfollowed?.event ?? configuredTurned(world.claim, configured);
  return {
    ...decision,
    ...(unfollowed ? { operation: unfollowed.operation } : {}),
    ...(event ? { event } : {}),
    // A worker's operation still in flight is looked at again, in case its process stops.
    soon: decision.soon || (ours(world) !== undefined && !unfollowed),
  };
}

/**
 * Whether the claim may be asked to apply, so a branch worker's dispatcher may POST: not being
 * deleted, and InControl=True, Suspended (idle) or Applying.
 */
export function holdsWebhook(claim: WebhookClaim): boolean {
  if (claim.metadata.deletionTimestamp) return false;
  const inControl = claim.status?.conditions?.find((c) => c.type === C.InControl);
  return ([R.Suspended, R.Applying] as string[]).includes(inControl?.reason ?? "");
}

/** Configured: who names the claim, then its URL and its Secret, then whether it is bound. */
function configuredCondition(world: WebhookClaimWorld): ConditionUpdate {
  const { verdict, secret, urlRefusal, claim } = world;
  const at = configuredAt(factsOf(world));
  if (verdict.kind === "notReferenced")
    return at("Unknown", R.NotReferenced, "No GitTarget names this claim.");
  if (urlRefusal) return at("False", R.InsecureURL, urlRefusal);
  if (!secret) return at("Unknown", R.Progressing, "The Secret has not been read yet.");
  if (secret.kind === "problem") return at("False", secret.reason, secretAdvice(secret));
  if (verdict.kind === "pending") return at("Unknown", verdict.reason, verdict.message);
  if (verdict.kind === "refused") return at("False", verdict.reason, verdict.message);
  return at(
    "True",
    R.Succeeded,
    `A branch worker asks ${claim.spec.url} to apply what GitTarget ${boundNames(verdict)} writes.`,
  );
}

/** A Secret problem's message, with what to do when the message does not say it already. */
function secretAdvice(problem: { reason: string; message: string }): string {
  if (problem.reason !== R.SecretNotFound || !problem.message.endsWith("does not exist."))
    return problem.message;
  return `${problem.message} Create it in this namespace with the HMAC key the receiver checks under the key token.`;
}

/** What the shared condition rules read of a WebhookClaim's world: it has no applier to read. */
function factsOf(world: WebhookClaimWorld): ClaimFacts {
  return { claim: world.claim, verdict: world.verdict, applierMissing: false, applierRead: true };
}

/** The operation a branch worker started and that is still in flight, if there is one. */
function ours(world: WebhookClaimWorld): ApplyOperation | undefined {
  const operation = world.claim.status?.operation;
  return operation && inFlight(operation) && operation.requestToken ? operation : undefined;
}

/**
 * An operation a stopped process left in flight, ended Failed once nobody has followed it for
 * the grace the other claims give it (following.ts): with no applier held there is nothing to
 * put back first, so it ends at once, and the claim can be asked again.
 */
function endUnfollowed(
  world: WebhookClaimWorld,
): { operation: ApplyOperation; event: EventNote } | undefined {
  const operation = ours(world);
  if (!operation || (world.unfollowedMs ?? 0) < unfollowedGraceMs) return undefined;
  const message = `Nobody follows the apply of ${operation.commit ?? "the tip"} (token ${operation.requestToken}): its process stopped.`;
  return {
    operation: failed(operation, world.now, message),
    event: { type: "Warning", reason: "OperationUnfollowed", note: message },
  };
}

/** Configured: InControl says how the operation stands, and the claim is Ready. */
function inControl(
  world: WebhookClaimWorld,
  configured: ConditionUpdate,
  unfollowed: { operation: ApplyOperation } | undefined,
): WebhookClaimDecision {
  const operation = unfollowed ? undefined : world.claim.status?.operation;
  const commit = operation?.commit ?? "the tip";
  const [reason, message] =
    operation?.phase === "Unresolved"
      ? [R.OperationUnresolved, `The apply of ${commit} ran past its budget and is still followed.`]
      : operation && inFlight(operation)
        ? [R.Applying, `A branch worker's apply of ${commit} is in flight.`]
        : [R.Suspended, "Nothing is applied until a branch worker asks."];
  return {
    step: { kind: "none" },
    conditions: conditionsOf(factsOf(world), configured, "True", reason, message, readyTrio),
    soon: false,
  };
}

/** Not asked: nothing names the claim (Ready), it waits to be bound, or a human must fix it. */
function idle(world: WebhookClaimWorld, configured: ConditionUpdate): WebhookClaimDecision {
  const facts = factsOf(world);
  if (world.verdict.kind === "notReferenced") {
    const message = "No GitTarget names this claim, so it holds nothing and reads nothing.";
    return {
      step: { kind: "none" },
      conditions: conditionsOf(facts, configured, "False", R.NotReferenced, message, readyTrio),
      soon: false,
    };
  }
  const deleting = world.claim.metadata.deletionTimestamp !== undefined;
  const reason = deleting ? R.NotConfigured : configured.reason;
  const message = deleting
    ? "The claim is being deleted; it holds nothing."
    : `Holds nothing: ${configured.message}`;
  const pending = configured.status === "Unknown";
  const trio = deleting ? readyTrio : pending ? progressingTrio : stalledTrio;
  return {
    step: { kind: "none" },
    conditions: conditionsOf(facts, configured, "False", reason, message, trio),
    soon: pending && !deleting,
  };
}

/**
 * An Event when Configured turns True (Normal) or False (Warning, with its reason), against what
 * the claim's status says now; Unknown is on its way and says nothing.
 */
function configuredTurned(claim: WebhookClaim, configured: ConditionUpdate): EventNote | undefined {
  if (configured.status === "Unknown") return undefined;
  const before = claim.status?.conditions?.find((c) => c.type === C.Configured);
  if (before?.status === configured.status && before.reason === configured.reason) return undefined;
  return configured.status === "True"
    ? { type: "Normal", reason: "Configured", note: configured.message }
    : { type: "Warning", reason: configured.reason, note: configured.message };
}
