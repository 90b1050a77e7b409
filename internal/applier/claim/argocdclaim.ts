// The ArgoCDClaim reconciler's decision: one step per pass, from what it read (applier-claims.md,
// "The Argo CD applier"). A claim an eligible GitTarget references holds its Application's
// automated sync off: it owns syncPolicy.automated.enabled: false by server-side apply, touching
// nothing else of automated, switches it off again when somebody switches it on, and gives the
// switch up on hand-back. A switch an ApplicationSet or another field manager applies is never
// written, only checked. Automated sync off needs no suspend after a sync: an Argo CD operation
// that completed is followed by none nobody started.
import type { ArgoCDClaim } from "../../../generated/v1alpha3/index.ts";
import { ArgoCDClaimCondition as C, ArgoCDClaimReason as R } from "../../../generated/v1alpha3/conditions.ts";
import { progressingTrio, readyTrio, stalledTrio, type ConditionUpdate } from "../../operator/conditions.ts";
import { keyOf, type NamespacedName } from "../../types/names.ts";
import type { VersionCheck } from "../argocd/client.ts";
import { branchOf, type ApplicationView } from "../argocd/view.ts";
import {
  boundNames,
  conditionsOf,
  configuredAt,
  handBackFrame,
  sharedConfigured,
  type ClaimDecision,
  type ClaimFacts,
  type EventNote,
  type Trio,
} from "./claimstatus.ts";
import { unfollowedGraceMs } from "./following.ts";
import { failed, inFlight, type Verdict } from "../decide/index.ts";

export const argoCDClaimFinalizer = "configbutler.ai/argocd-trigger";

export interface ArgoCDClaimWorld {
  claim: ArgoCDClaim;
  now: Date;
  verdict: Verdict;
  /** Read when the verdict let us read; undefined when it is missing, or could not be read. */
  application?: ApplicationView;
  /** Whether the cluster's Argo CD has the switch (3.1 or newer), read with the Application. */
  version?: VersionCheck;
  /** The Application's cluster answered that it does not exist. */
  applierMissing: boolean;
  /** The first claim in line for the same Application, when it is another. */
  heldBy?: NamespacedName;
  /** Another claim in line is eligible to take the Application over. */
  successor: boolean;
  /** When InControl turned Releasing, if it is. */
  releasingSince?: Date;
  /** How long a branch worker's operation in flight has gone unfollowed by this process; 0 while followed. */
  unfollowedMs?: number;
}

export type ArgoCDStep =
  | { kind: "none" }
  | { kind: "addFinalizer" }
  /** syncPolicy.automated.enabled: false, applied under our field manager. */
  | { kind: "switchOff" }
  /** Give the switch up: Argo CD's own spec decides again. */
  | { kind: "giveUp" }
  /** Off as it stood before the claim, by an update that leaves no apply of ours behind. */
  | { kind: "leaveOff" }
  | { kind: "removeFinalizer" };

export type ArgoCDClaimDecision = ClaimDecision<ArgoCDStep>;

export function decideArgoCDClaim(world: ArgoCDClaimWorld): ArgoCDClaimDecision {
  const { claim, verdict } = world;
  const holding = claim.metadata.finalizers?.includes(argoCDClaimFinalizer) ?? false;
  const deleting = claim.metadata.deletionTimestamp !== undefined;
  const configured = configuredCondition(world);
  const keep = configured.status === "True" && !deleting;
  if (!holding) return keep ? adopt(world, configured) : idle(world, configured);
  if (keep) return hold(world, configured);
  if (verdict.kind === "pending" && !deleting) {
    const message = `Automated sync of the Application is left off under gitops-reverser until this is settled: ${configured.message}`;
    return decision(
      world,
      configured,
      { status: "Unknown", reason: R.NotConfigured, message },
      { soon: true, trioSays: configured },
    );
  }
  return handBack(world, configured);
}

export function applicationRefOf(claim: ArgoCDClaim): NamespacedName {
  return {
    namespace: claim.spec.applicationRef.namespace ?? claim.metadata.namespace!,
    name: claim.spec.applicationRef.name,
  };
}

/**
 * Whether the claim holds its Application, so a branch worker may ask it to sync: it carries its
 * finalizer and is InControl as Suspended (automated sync off) or Applying.
 */
export function holdsApplication(claim: ArgoCDClaim): boolean {
  if (!claim.metadata.finalizers?.includes(argoCDClaimFinalizer) || claim.metadata.deletionTimestamp)
    return false;
  const inControl = claim.status?.conditions?.find((c) => c.type === C.InControl);
  return ([R.Suspended, R.Applying] as string[]).includes(inControl?.reason ?? "");
}

/** Why a sync must not be started on the Application for this branch, if it must not. */
export function syncRefusal(
  app: ApplicationView,
  branch: { repository: string; branch: string },
  normalize: (url: string) => string,
): string | undefined {
  const name = `Application ${keyOf(app.ref)}`;
  if (app.unsupportedSource) return `${name} cannot be coordinated: ${app.unsupportedSource}.`;
  if (app.automatedOn) return `${name} has automated sync on: it is not held.`;
  const { repoURL, targetRevision } = app.source;
  if (normalize(repoURL) !== normalize(branch.repository) || branchOf(targetRevision) !== branch.branch)
    return `${name} syncs ${repoURL} at ${targetRevision || "HEAD"}, not ${branch.repository} branch ${branch.branch}.`;
  return undefined;
}

function configuredCondition(world: ArgoCDClaimWorld): ConditionUpdate {
  const { application: app, claim } = world;
  const facts = factsOf(world);
  const shared = sharedConfigured(facts, `Application ${keyOf(applicationRefOf(claim))}`, "ArgoCDClaim");
  if (shared || !app) return shared!;
  const at = configuredAt(facts);
  const name = `Application ${keyOf(app.ref)}`;
  if (world.version?.kind === "unsupported")
    return at("False", R.ArgoCDVersionNotSupported, world.version.message);
  if (world.version?.kind === "unknown") return at("Unknown", R.Progressing, world.version.message);
  if (app.unsupportedSource)
    return at(
      "False",
      R.UnsupportedSource,
      `${name} cannot be coordinated: ${app.unsupportedSource}. Only an Application with a single spec.source can be.`,
    );
  if (app.applicationSet && app.automatedOn)
    return at(
      "False",
      R.OwnedByApplicationSet,
      `ApplicationSet ${app.applicationSet} generated ${name} with automated sync on, and replaces its spec on every reconcile. Set syncPolicy.automated.enabled: false in the ApplicationSet's template.`,
    );
  if (app.switchAppliedBy.length > 0 && app.automatedOn)
    return at(
      "False",
      R.AutomatedSyncOwnedElsewhere,
      `Field manager ${app.switchAppliedBy.join(", ")} applies syncPolicy.automated.enabled of ${name} and keeps automated sync on. Set enabled: false in the manifest that applies the Application.`,
    );
  return at("True", R.Succeeded, `${name} syncs what GitTarget ${boundNames(world.verdict)} writes.`);
}

function factsOf(world: ArgoCDClaimWorld): ClaimFacts {
  return {
    claim: world.claim,
    verdict: world.verdict,
    applierMissing: world.applierMissing,
    applierRead: world.application !== undefined,
    ...(world.heldBy ? { heldBy: world.heldBy } : {}),
  };
}

/** A decision with InControl and the trio as given; `soon`, another trio, or a step when they differ. */
function decision(
  world: ArgoCDClaimWorld,
  configured: ConditionUpdate,
  inControl: { status: ConditionUpdate["status"]; reason: string; message: string },
  more: {
    soon?: boolean;
    trio?: Trio;
    trioSays?: { reason: string; message: string };
    step?: ArgoCDStep;
  } = {},
): ArgoCDClaimDecision {
  const { status, reason, message } = inControl;
  return {
    step: more.step ?? { kind: "none" },
    conditions: conditionsOf(factsOf(world), configured, status, reason, message, more.trio, more.trioSays),
    soon: more.soon ?? false,
  };
}

/** How the switch stood: Active when automated sync is on. */
const standing = (app: ApplicationView) => (app.automatedOn ? ("Active" as const) : ("Suspended" as const));

function idle(world: ArgoCDClaimWorld, configured: ConditionUpdate): ArgoCDClaimDecision {
  if (world.verdict.kind === "notReferenced") {
    const message = "No GitTarget names this claim, so it holds nothing and reads nothing.";
    return decision(
      world,
      configured,
      { status: "False", reason: R.NotReferenced, message },
      { trio: readyTrio },
    );
  }
  const unknown = configured.status === "Unknown";
  const message = `Holds nothing: ${configured.message}`;
  return decision(
    world,
    configured,
    { status: "False", reason: R.NotConfigured, message },
    { soon: unknown, trio: unknown ? progressingTrio : stalledTrio, trioSays: configured },
  );
}

/** The finalizer goes on before the first write to the Application, with how its switch stood. */
function adopt(world: ArgoCDClaimWorld, configured: ConditionUpdate): ArgoCDClaimDecision {
  const app = world.application!;
  const message = `Adopting Application ${keyOf(app.ref)}.`;
  return {
    ...decision(
      world,
      configured,
      { status: "Unknown", reason: R.Suspending, message },
      { soon: true, step: { kind: "addFinalizer" } },
    ),
    previousSuspendState: standing(app),
  };
}

function hold(world: ArgoCDClaimWorld, configured: ConditionUpdate): ArgoCDClaimDecision {
  const { claim } = world;
  const app = world.application!;
  const name = `Application ${keyOf(app.ref)}`;
  const recorded = claim.status?.previousSuspendState ? {} : { previousSuspendState: standing(app) };
  const writable = !app.applicationSet && app.switchAppliedBy.length === 0;
  if (writable && (!app.heldByUs || app.automatedOn)) {
    const said = claim.status?.conditions?.find((c) => c.type === C.InControl)?.reason;
    const reclaimed = app.heldByUs || said === R.Suspended || said === R.Applying;
    const event: EventNote = reclaimed
      ? {
          type: "Normal",
          reason: "ClaimedResourceReconciled",
          note: `Automated sync of ${name} was switched on outside GitOps Reverser; switched off again.`,
        }
      : {
          type: "Normal",
          reason: "Adopted",
          note: `Switched automated sync of ${name} off: it syncs only when a branch worker asks.`,
        };
    const message = `Switching automated sync of ${name} off.`;
    return {
      ...decision(
        world,
        configured,
        { status: "Unknown", reason: R.Suspending, message },
        { soon: true, step: { kind: "switchOff" } },
      ),
      ...recorded,
      event,
    };
  }
  const held = {
    ...decision(
      world,
      configured,
      { status: "True", reason: R.Suspended, message: heldMessage(app, name) },
      { trio: readyTrio },
    ),
    ...recorded,
  };
  const operation = claim.status?.operation;
  const ours = operation && inFlight(operation) && operation.requestToken ? operation : undefined;
  if (ours && (world.unfollowedMs ?? 0) >= unfollowedGraceMs) {
    const message = `Nobody follows the sync of ${ours.commit ?? "the tip"} (token ${ours.requestToken}): its process stopped.`;
    return {
      ...held,
      operation: failed(ours, world.now, message),
      event: { type: "Warning", reason: "OperationUnfollowed", note: message },
    };
  }
  if (ours) {
    const message = `A branch worker's sync of ${ours.commit ?? "the tip"} is in flight.`;
    return {
      ...decision(
        world,
        configured,
        { status: "True", reason: R.Applying, message },
        { soon: true, trio: readyTrio },
      ),
      ...recorded,
    };
  }
  return held;
}

function heldMessage(app: ApplicationView, name: string): string {
  const by = app.applicationSet
    ? ` (the switch is ApplicationSet ${app.applicationSet}'s, checked on every pass)`
    : app.switchAppliedBy.length > 0
      ? ` (the switch is field manager ${app.switchAppliedBy.join(", ")}'s, checked on every pass)`
      : "";
  return `Automated sync of ${name} is off${by}; it syncs only when a branch worker asks.`;
}

function handBack(world: ArgoCDClaimWorld, configured: ConditionUpdate): ArgoCDClaimDecision {
  const { claim, application: app } = world;
  const name = `Application ${keyOf(applicationRefOf(claim))}`;
  const { done, over } = handBackFrame(factsOf(world), configured, world, name, () =>
    app ? `its automated sync was left ${app.automatedOn ? "on" : "off"}` : "it was left as it was",
  );
  if (over) return over;
  const releasing = (message: string, step: ArgoCDStep = { kind: "none" }): ArgoCDClaimDecision =>
    decision(world, configured, { status: "False", reason: R.Releasing, message }, { soon: true, step });
  if (!app) return releasing(`Handing ${name} back once its cluster can be read.`);
  if (world.successor) return done(`${name} is left with automated sync off for the next claim in line.`);
  if (app.heldByUs) return releasing(`Giving the automated sync switch of ${name} up.`, { kind: "giveUp" });
  // Given up: the Application's own spec decides, unless it was off before the claim and is on now.
  if (claim.status?.previousSuspendState === "Suspended" && app.automatedOn)
    return releasing(`Leaving automated sync of ${name} off, as it was before this claim held it.`, {
      kind: "leaveOff",
    });
  return done(
    `${name} is Argo CD's again: automated sync is ${app.automatedOn ? "on" : "off"} as its spec says.`,
  );
}
