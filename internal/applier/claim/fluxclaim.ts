// The FluxClaim reconciler's decision: one step per pass, from what it read. A claim that an
// eligible GitTarget references holds its Kustomization suspended under our field manager;
// one that no longer may hands it back. Every write that suspends carries a token, and nothing
// counts as held until Flux has handled it (flux/view.ts says why that proves it).
import type { ApplyOperation, FluxClaim } from "../../../generated/v1alpha3/index.ts";
import { FluxClaimCondition as C, FluxClaimReason as R } from "../../../generated/v1alpha3/conditions.ts";
import {
  progressingTrio,
  readyTrio,
  retryingTrio,
  stalledTrio,
  type ConditionUpdate,
} from "../../operator/conditions.ts";
import {
  conditionsOf,
  configuredAt,
  sharedConfigured,
  boundNames,
  handBackFrame,
  type ClaimDecision,
  type ClaimFacts,
} from "./claimstatus.ts";
import { keyOf, type NamespacedName } from "../../types/names.ts";
import { suspendHandled, type KustomizationView } from "../flux/view.ts";
import { failed, inFlight, type Verdict } from "../decide/index.ts";
import { unfollowedGraceMs } from "./following.ts";

export const fluxClaimFinalizer = "configbutler.ai/flux-trigger";

export interface FluxClaimWorld {
  claim: FluxClaim;
  now: Date;
  verdict: Verdict;
  /** Read when the verdict let us read; undefined when it is missing, or could not be read. */
  kustomization?: KustomizationView;
  /** The Kustomization's cluster answered that it does not exist. */
  applierMissing: boolean;
  /** The first claim in line for the same Kustomization, when it is another. */
  heldBy?: NamespacedName;
  /** Another claim in line is eligible to take the Kustomization over. */
  successor: boolean;
  /** When InControl turned Releasing, if it is. */
  releasingSince?: Date;
  /** A fresh token, for a write that suspends. */
  token: string;
  /** How long a branch worker's operation in flight has gone unfollowed by this process; 0 while followed. */
  unfollowedMs?: number;
}

export type Step =
  | { kind: "none" }
  | { kind: "addFinalizer" }
  | { kind: "suspend"; token: string }
  /** Force spec.suspend: false, then give the field up, so Flux owns it again. */
  | { kind: "release" }
  /** Give the field up without forcing it: another manager applies it. */
  | { kind: "giveUp" }
  | { kind: "removeFinalizer" };

export type FluxClaimDecision = ClaimDecision<Step>;

export function decideFluxClaim(world: FluxClaimWorld): FluxClaimDecision {
  const { claim, verdict } = world;
  const holding = claim.metadata.finalizers?.includes(fluxClaimFinalizer) ?? false;
  const deleting = claim.metadata.deletionTimestamp !== undefined;
  const configured = configuredCondition(world);
  const keep = configured.status === "True" && !deleting;
  if (!holding) return keep ? adopt(world, configured) : idle(world, configured);
  if (keep) return hold(world, configured);
  if (verdict.kind === "pending" && !deleting) return waitWhileHeld(world, configured);
  return handBack(world, configured);
}

function configuredCondition(world: FluxClaimWorld): ConditionUpdate {
  const { kustomization: k, claim } = world;
  const facts = factsOf(world);
  const shared = sharedConfigured(facts, `Kustomization ${keyOf(claimedRef(claim))}`, "FluxClaim");
  if (shared || !k) return shared!;
  const at = configuredAt(facts);
  if (k.suspendAppliedBy.length > 0) {
    return at(
      "False",
      R.SuspendOwnedElsewhere,
      `Field manager ${k.suspendAppliedBy.join(", ")} applies spec.suspend of Kustomization ${keyOf(k.ref)}, and would take the hold back on its next apply. Remove suspend from the manifest that applies the Kustomization.`,
    );
  }
  return at(
    "True",
    R.Succeeded,
    `Kustomization ${keyOf(k.ref)} applies what GitTarget ${boundNames(world.verdict)} writes.`,
  );
}

/** What the shared condition rules read of a FluxClaim's world. */
function factsOf(world: FluxClaimWorld): ClaimFacts {
  return {
    claim: world.claim,
    verdict: world.verdict,
    applierMissing: world.applierMissing,
    applierRead: world.kustomization !== undefined,
    ...(world.heldBy ? { heldBy: world.heldBy } : {}),
  };
}

/**
 * Whether the claim holds its Kustomization, so a branch worker may ask it to apply: it carries
 * its finalizer and is InControl=True, Suspended or Applying. A claim still adopting, whose
 * suspend Flux has not handled yet (Suspending), is not resumed (applier-claims.md): a resume
 * then would apply a Kustomization the claim never held.
 */
export function holdsApplier(claim: FluxClaim): boolean {
  if (!claim.metadata.finalizers?.includes(fluxClaimFinalizer) || claim.metadata.deletionTimestamp)
    return false;
  const inControl = claim.status?.conditions?.find((c) => c.type === C.InControl);
  return ([R.Suspended, R.Applying] as string[]).includes(inControl?.reason ?? "");
}

export function claimedRef(claim: FluxClaim): NamespacedName {
  return {
    namespace: claim.spec.kustomizationRef.namespace ?? claim.metadata.namespace!,
    name: claim.spec.kustomizationRef.name,
  };
}

/** Neither holding nor about to: conditions only. */
function idle(world: FluxClaimWorld, configured: ConditionUpdate): FluxClaimDecision {
  if (world.verdict.kind === "notReferenced") {
    const message = "No GitTarget names this claim, so it holds nothing and reads nothing.";
    return {
      step: { kind: "none" },
      conditions: conditionsOf(factsOf(world), configured, "False", R.NotReferenced, message, readyTrio),
      soon: false,
    };
  }
  const message = `Holds nothing: ${configured.message}`;
  const trio = configured.status === "Unknown" ? progressingTrio : stalledTrio;
  return {
    step: { kind: "none" },
    conditions: conditionsOf(factsOf(world), configured, "False", R.NotConfigured, message, trio, configured),
    soon: configured.status === "Unknown",
  };
}

/** The finalizer goes on before the first write to the Kustomization, with how it stood. */
function adopt(world: FluxClaimWorld, configured: ConditionUpdate): FluxClaimDecision {
  const k = world.kustomization!;
  const message = `Adopting Kustomization ${keyOf(k.ref)}.`;
  return {
    step: { kind: "addFinalizer" },
    conditions: conditionsOf(factsOf(world), configured, "Unknown", R.Suspending, message),
    previousSuspendState: k.suspended ? "Suspended" : "Active",
    soon: true,
  };
}

function hold(world: FluxClaimWorld, configured: ConditionUpdate): FluxClaimDecision {
  const { claim, token } = world;
  const k = world.kustomization!;
  const name = keyOf(k.ref);
  const operation = claim.status?.operation;
  const recorded = claim.status?.previousSuspendState
    ? {}
    : { previousSuspendState: k.suspended ? ("Suspended" as const) : ("Active" as const) };
  if (!adopted(world)) {
    const message = `Suspending Kustomization ${name}.`;
    return {
      step: { kind: "suspend", token },
      ...recorded,
      conditions: conditionsOf(factsOf(world), configured, "Unknown", R.Suspending, message),
      event: {
        type: "Normal",
        reason: "Adopted",
        note: `Suspended Kustomization ${name}: it applies only when a branch worker asks.`,
      },
      soon: true,
    };
  }
  const ours = operation && inFlight(operation) && operation.requestToken ? operation : undefined;
  // An operation a stopped process left in flight: suspended, then ended Failed.
  const abandoned = ours && (world.unfollowedMs ?? 0) >= unfollowedGraceMs ? ours : undefined;
  if (abandoned && (!k.suspended || !abandoned.suspendToken)) {
    const message = `Nobody follows the apply of ${abandoned.commit ?? "the tip"} (token ${abandoned.requestToken}): its process stopped. The Kustomization is suspended again, and the operation ends Failed once Flux handles that.`;
    return {
      step: { kind: "suspend", token },
      conditions: conditionsOf(factsOf(world), configured, "Unknown", R.Suspending, message),
      operation: { ...abandoned, phase: "Unresolved", suspendToken: token, message },
      event: { type: "Warning", reason: "OperationUnfollowed", note: message },
      soon: true,
    };
  }
  if (!k.suspended) {
    if (ours) {
      const message = `A branch worker's apply of ${ours.commit ?? "the tip"} is in flight.`;
      return {
        step: { kind: "none" },
        conditions: conditionsOf(factsOf(world), configured, "True", R.Applying, message, readyTrio),
        soon: true,
      };
    }
    // Resumed by somebody else (flux resume, kubectl edit): suspended again, every time, and
    // followed as an apply nobody asked for until the suspend is handled.
    const message = `Kustomization ${name} was resumed outside GitOps Reverser; suspending it again.`;
    return {
      step: { kind: "suspend", token },
      conditions: conditionsOf(factsOf(world), configured, "Unknown", R.Suspending, message, retryingTrio, {
        reason: R.OperationUnresolved,
        message,
      }),
      operation: { phase: "Unresolved", suspendToken: token, requestedAt: world.now.toISOString(), message },
      event: { type: "Normal", reason: "ClaimedResourceReconciled", note: message },
      soon: true,
    };
  }
  if (!suspendHandled(k)) {
    const message = `Waiting for Flux to handle the suspend of Kustomization ${name}.`;
    return {
      step: { kind: "none" },
      conditions: conditionsOf(factsOf(world), configured, "Unknown", R.Suspending, message),
      soon: true,
    };
  }
  const message = `Kustomization ${name} is suspended; it applies only when a branch worker asks.`;
  const external =
    operation && inFlight(operation) && !operation.requestToken
      ? completeExternal(operation, k, world.now)
      : abandoned
        ? failed(
            abandoned,
            world.now,
            "Nobody followed this apply to its end (its process stopped); the Kustomization is suspended again.",
          )
        : undefined;
  return {
    step: { kind: "none" },
    conditions: conditionsOf(factsOf(world), configured, "True", R.Suspended, message, readyTrio),
    ...(external ? { operation: external } : {}),
    // A worker's operation still in flight is looked at again, in case its process stops.
    soon: ours !== undefined && !abandoned,
  };
}

/**
 * Whether the claim holds the Kustomization already: our Apply entry owns spec.suspend, or the
 * claim said so. A merge patch of spec.suspend (flux resume, kubectl edit) takes the field from
 * our entry, so after an external resume only the claim's own record tells it was held.
 */
function adopted(world: FluxClaimWorld): boolean {
  const said = world.claim.status?.conditions?.find((c) => c.type === C.InControl)?.reason;
  return world.kustomization!.heldByUs || said === R.Suspended || said === R.Applying;
}

/** An apply somebody else started ended once our suspend after it was handled. */
function completeExternal(operation: ApplyOperation, k: KustomizationView, now: Date): ApplyOperation {
  const applied = k.ready?.status === "True";
  return {
    ...operation,
    phase: applied ? "Succeeded" : "Failed",
    completedAt: now.toISOString(),
    message: `An apply started outside GitOps Reverser ended ${applied ? `at ${k.lastAppliedRevision ?? "an unknown revision"}` : `not Ready (${k.ready?.reason ?? "no Ready condition"})`}; the Kustomization is suspended again.`,
  };
}

/** A reference that cannot be judged yet keeps the hold: a release is not undone. */
function waitWhileHeld(world: FluxClaimWorld, configured: ConditionUpdate): FluxClaimDecision {
  const message = `The Kustomization is left suspended under gitops-reverser until this is settled: ${configured.message}`;
  return {
    step: { kind: "none" },
    conditions: conditionsOf(
      factsOf(world),
      configured,
      "Unknown",
      R.NotConfigured,
      message,
      progressingTrio,
      configured,
    ),
    soon: true,
  };
}

function handBack(world: FluxClaimWorld, configured: ConditionUpdate): FluxClaimDecision {
  const { claim, kustomization: k } = world;
  const name = keyOf(claimedRef(claim));
  const { done, over } = handBackFrame(factsOf(world), configured, world, `Kustomization ${name}`, () =>
    k ? `it was left ${k.suspended ? "suspended" : "resumed"}` : "it was left as it was",
  );
  if (over) return over;
  const releasing = (message: string, step: Step = { kind: "none" }): FluxClaimDecision => ({
    step,
    conditions: conditionsOf(factsOf(world), configured, "False", R.Releasing, message),
    soon: true,
  });
  if (!k) return releasing(`Handing Kustomization ${name} back once its cluster can be read.`);
  const owner = k.suspendAppliedBy;
  if (owner.length > 0) {
    if (!k.heldByUs) return done(`Kustomization ${name}: spec.suspend is ${owner.join(", ")}'s.`);
    return releasing(`Giving spec.suspend of Kustomization ${name} up to ${owner.join(", ")}.`, {
      kind: "giveUp",
    });
  }
  if (!k.heldByUs && !k.suspended) return done(`Kustomization ${name} is Flux's again.`);
  if (!k.suspended)
    return releasing(`Suspending Kustomization ${name} before handing it back.`, {
      kind: "suspend",
      token: world.token,
    });
  if (!suspendHandled(k))
    return releasing(`Waiting for Flux to handle the suspend of Kustomization ${name}.`);
  if (world.successor) return done(`Kustomization ${name} is left suspended for the next claim in line.`);
  if (claim.status?.previousSuspendState === "Suspended" || !k.heldByUs) {
    return done(`Kustomization ${name} is left suspended, as it was before this claim held it.`);
  }
  return releasing(`Handing Kustomization ${name} back to Flux.`, { kind: "release" });
}
