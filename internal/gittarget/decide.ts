// The GitTarget reconciler's decisions, as pure functions of what it read. References are
// checked here, in status, never at admission, so a folder of manifests applies in any order.
import type { GitBranch, GitTarget, KubeProvider } from "../../generated/v1alpha3/index.ts";
import { GitTargetCondition as C, GitTargetReason as R } from "../../generated/v1alpha3/conditions.ts";
import {
  findCondition,
  progressingTrio,
  readyTrio,
  retryingTrio,
  stalledTrio,
  suspendedTrio,
  type Condition,
  type ConditionUpdate,
} from "../operator/conditions.ts";
import {
  contentionMessage,
  type ContentionFacts,
  outageMessage,
  type OutageFacts,
  unwrittenMessage,
  type RefusedWrite,
} from "../git/index.ts";
import { grantsAdmit } from "../grants/namespaces.ts";
import type { StreamSummary } from "../watch/manager.ts";
import { applierClaimCondition, type ClaimFacts } from "./claim.ts";
import { overlappingOlder } from "./paths.ts";
import { refOf } from "../types/names.ts";

export interface TargetWorld {
  target: GitTarget;
  provider: KubeProvider | undefined;
  branch: GitBranch | undefined;
  /** Labels of the target's own namespace, for Selector grants. */
  namespaceLabels: Record<string, string>;
  /** Every GitTarget naming the same GitBranch, from any namespace. */
  sameBranch: GitTarget[];
  /** The applier claim spec.applierClaimRef names, when it names one. */
  claim?: ClaimFacts;
}

/** Why the target cannot be served, or undefined when its references hold. */
export interface Refusal {
  reason: string;
  message: string;
  /** Waiting for an object that may still be applied, rather than a block a human must clear. */
  transient: boolean;
}

export function validate(world: TargetWorld): Refusal | undefined {
  const { target, provider, branch, namespaceLabels } = world;
  const namespace = target.metadata.namespace!;
  const p = refOf(target.spec.kubeProviderRef, namespace);
  const b = refOf(target.spec.gitBranchRef, namespace);
  if (!provider) {
    return {
      reason: R.KubeProviderNotFound,
      message: `KubeProvider ${p.namespace}/${p.name} does not exist.`,
      transient: true,
    };
  }
  if (grantsAdmit(provider.spec.allowedGitTargets, p.namespace, namespace, namespaceLabels).length === 0) {
    return {
      reason: R.NamespaceNotAuthorized,
      message: `KubeProvider ${p.namespace}/${p.name} does not admit GitTargets from namespace ${namespace} (spec.allowedGitTargets).`,
      transient: false,
    };
  }
  if (!branch) {
    return {
      reason: R.GitBranchNotFound,
      message: `GitBranch ${b.namespace}/${b.name} does not exist.`,
      transient: true,
    };
  }
  if (grantsAdmit(branch.spec.allowedGitTargets, b.namespace, namespace, namespaceLabels).length === 0) {
    return {
      reason: R.NamespaceNotAuthorized,
      message: `GitBranch ${b.namespace}/${b.name} does not admit GitTargets from namespace ${namespace} (spec.allowedGitTargets).`,
      transient: false,
    };
  }
  const older = overlappingOlder(target, world.sameBranch);
  if (older) {
    return {
      reason: R.PathOverlap,
      message: `Path ${target.spec.path} overlaps ${older.spec.path} of the older GitTarget ${older.metadata.namespace}/${older.metadata.name} on GitBranch ${b.namespace}/${b.name}.`,
      transient: false,
    };
  }
  return undefined;
}

function mirrored(
  type: string,
  source: Condition | undefined,
  notFound: string,
  generation: number | undefined,
): ConditionUpdate {
  if (!source)
    return {
      type,
      status: "Unknown",
      reason: notFound,
      message: "not reported yet",
      observedGeneration: generation,
    };
  return {
    type,
    status: source.status,
    reason: source.reason,
    message: source.message,
    observedGeneration: generation,
  };
}

/** What the write side reports of the target. */
export interface WriteFacts {
  /** A branch worker takes the target's stream. */
  attached: boolean;
  /** Sensitive objects refused fail-safe, as "resource namespace/name". */
  refused: string[];
  /** How many SOPS documents the folder holds, once the worker has read it. */
  encryptedDocuments?: number;
  /** The acceptance gate's refusal of the folder, naming the file and the feature. */
  folderRefusal?: string;
  /** Each change that had nowhere to land (a read-only base document, a value kustomize cannot carry), and why. */
  refusedWrites?: readonly RefusedWrite[];
  /** The render-vs-live gate, once the worker has a view of the folder. */
  renderGate?: { status: "True" | "False" | "Unknown"; reason: string; message: string };
  /** The branch's remote cannot be reached: since when, what failed, and what is kept. */
  outage?: OutageFacts;
  /** The branch keeps moving under the worker's pushes: how often, and what is kept. */
  contention?: ContentionFacts;
}

/** Reasons only a person can clear: the target is Stalled until they do. */
const humanFixes: readonly string[] = [
  R.UnsupportedContent,
  R.ValueNotRepresentable,
  R.RenderDoesNotMatchLive,
];

/**
 * The reason of a folder whose changes stay unwritten: ValueNotRepresentable when every one of
 * them holds a value kustomize cannot carry (the fix is the value's, not the folder's).
 */
function unwrittenReason(refused: readonly RefusedWrite[]): string {
  return refused.length > 0 && refused.every((w) => w.reason === "value_not_representable")
    ? R.ValueNotRepresentable
    : R.UnsupportedContent;
}

function writeConditions(world: TargetWorld, write: WriteFacts, g: number | undefined): ConditionUpdate[] {
  const path = world.target.spec.path;
  // A change refused is as much a human's to fix as a folder refused: never Ready while it stays.
  const refused = write.refusedWrites ?? [];
  const unwritten = write.folderRefusal ?? unwrittenMessage(refused.map((w) => w.message));
  const accepted: ConditionUpdate = unwritten
    ? {
        type: C.GitPathAccepted,
        status: "False",
        reason: write.folderRefusal ? R.UnsupportedContent : unwrittenReason(refused),
        message: unwritten,
        observedGeneration: g,
      }
    : write.attached
      ? {
          type: C.GitPathAccepted,
          status: "True",
          reason: R.Succeeded,
          message: `Writing ${path}`,
          observedGeneration: g,
        }
      : {
          type: C.GitPathAccepted,
          status: "Unknown",
          reason: R.GitBranchNotReady,
          message:
            "No branch worker writes the folder yet: the GitBranch does not hold its branch, or its credential cannot be read",
          observedGeneration: g,
        };
  const shown =
    write.refused.slice(0, 10).join(", ") +
    (write.refused.length > 10 ? `, and ${write.refused.length - 10} more` : "");
  const recipients = world.target.spec.encryption?.age.recipients ?? [];
  const encryption: ConditionUpdate = {
    type: C.EncryptionConfigured,
    ...(write.refused.length > 0
      ? {
          status: "False",
          reason: R.EncryptionNotConfigured,
          message:
            recipients.length === 0
              ? `Sensitive resources are never written in plaintext, and spec.encryption is not set, so these were refused: ${shown}. Add spec.encryption.age.recipients to write them as SOPS documents.`
              : `Encrypting these sensitive resources failed, so nothing of them was written: ${shown}. Check spec.encryption.age.recipients; the operator's log says what failed.`,
        }
      : {
          status: "True",
          reason: R.Succeeded,
          message:
            recipients.length === 0
              ? "spec.encryption is not set: a sensitive resource would be refused, never written in plaintext."
              : `${write.encryptedDocuments ?? 0} sensitive document(s) held encrypted with SOPS, to ${recipients.length} age recipient(s).`,
        }),
    observedGeneration: g,
  };
  return [accepted, encryption, renderCondition(write, g)];
}

// A refused folder is never measured, so its gate would go on saying collections replay.
function renderCondition(write: WriteFacts, g: number | undefined): ConditionUpdate {
  if (write.folderRefusal)
    return {
      type: C.RenderMatchesLive,
      status: "Unknown",
      reason: R.UnsupportedContent,
      message: "The folder is not measured while GitPathAccepted refuses it; fix what that condition lists",
      observedGeneration: g,
    };
  return write.renderGate
    ? { type: C.RenderMatchesLive, ...write.renderGate, observedGeneration: g }
    : {
        type: C.RenderMatchesLive,
        status: "Unknown",
        reason: R.Rechecking,
        message: "No branch worker has measured the folder yet",
        observedGeneration: g,
      };
}

/** The status, from the validation, the referenced objects' conditions, the streams and the write side. */
export function targetConditions(
  world: TargetWorld,
  refusal: Refusal | undefined,
  streams: (StreamSummary & { unproven?: readonly string[] }) | undefined,
  write: WriteFacts = { attached: false, refused: [] },
): ConditionUpdate[] {
  const g = world.target.metadata.generation;
  if (refusal) {
    const trio = refusal.transient
      ? progressingTrio(refusal.reason, refusal.message, g)
      : stalledTrio(refusal.reason, refusal.message, g);
    return [
      ...trio,
      {
        type: C.Validated,
        status: "False",
        reason: refusal.reason,
        message: refusal.message,
        observedGeneration: g,
      },
    ];
  }
  const providerConditions = world.provider?.status?.conditions;
  const branchConditions = world.branch?.status?.conditions;
  const providerReady = mirrored(
    C.KubeProviderReady,
    findCondition(providerConditions, "Ready"),
    R.KubeProviderNotReady,
    g,
  );
  const reachable = mirrored(
    C.SourceClusterReachable,
    findCondition(providerConditions, "SourceClusterReachable"),
    R.SourceUnreachable,
    g,
  );
  const branchReady = mirrored(
    C.GitBranchReady,
    findCondition(branchConditions, "Ready"),
    R.GitBranchNotReady,
    g,
  );
  const running: ConditionUpdate =
    streams && streams.total > 0 && streams.running === streams.total
      ? {
          type: C.StreamsRunning,
          status: "True",
          ...streamingReason(streams.total, streams.unproven ?? []),
          observedGeneration: g,
        }
      : {
          type: C.StreamsRunning,
          status: "False",
          reason: R.InitialReplay,
          message: streams
            ? `${streams.running} of ${streams.total} collections streaming, ${streams.replaying} replaying, ${streams.blocked} blocked`
            : "no source context serves this target yet",
          observedGeneration: g,
        };
  const domain = [
    { type: C.Validated, status: "True" as const, reason: R.Succeeded, message: "", observedGeneration: g },
    providerReady,
    reachable,
    branchReady,
    running,
    ...(world.claim ? [applierClaimCondition(world.claim, g)] : []),
    ...writeConditions(world, write, g),
  ];
  return [...summaryTrio(world, write, domain, g), ...domain];
}

/**
 * Every collection streams; a kind whose dry-run create the credential may not make is still
 * mirrored, with its server defaults written to Git, which the reason and message say.
 */
function streamingReason(total: number, unproven: readonly string[]): { reason: string; message: string } {
  if (unproven.length === 0) return { reason: R.Succeeded, message: `${total} collections streaming` };
  const kinds = unproven.map(kubectlName).join(", ");
  return {
    reason: R.DefaultsProofForbidden,
    message:
      `${total} collections streaming; the source credential may not create ${kinds}, so their ` +
      "server defaults cannot be proven and are written to Git: grant create on them (a dry-run " +
      "creates nothing; docs/rbac.md, Proving server defaults)",
  };
}

/** group/resource as kubectl names it: resource.group, or the resource of the core group. */
function kubectlName(kind: string): string {
  const [group, resource] = kind.split("/");
  return group ? `${resource}.${group}` : resource!;
}

/**
 * Ready, Reconciling and Stalled, first match wins: suspended; a condition a person must fix
 * (Stalled); an outage (retrying); a moving remote; any other condition not yet True; ready.
 */
function summaryTrio(
  world: TargetWorld,
  write: WriteFacts,
  domain: ConditionUpdate[],
  g: number | undefined,
): ConditionUpdate[] {
  if (world.target.spec.suspend) {
    return suspendedTrio(
      R.Suspended,
      `spec.suspend is true, so nothing is written to ${world.target.spec.path}; the watches keep running, and setting it to false replays every collection into the folder`,
      g,
    );
  }
  const stalled = domain.find((c) => c.status === "False" && humanFixes.includes(c.reason));
  if (stalled) return stalledTrio(stalled.reason, `${stalled.type}: ${stalled.message}`, g);
  if (write.outage) {
    const reason = write.outage.fault === "local" ? R.LocalWriteFailed : R.RemoteUnreachable;
    return retryingTrio(reason, outageMessage(write.outage), g);
  }
  if (write.contention) return progressingTrio(R.RemoteMoving, contentionMessage(write.contention), g);
  // A refused sensitive resource is reported, but the rest of the folder is written: not a blocker.
  const blocker = domain.find((c) => c.status !== "True" && c.type !== C.EncryptionConfigured);
  if (blocker) return progressingTrio(blockerReason(blocker), `${blocker.type}: ${blocker.message}`, g);
  return readyTrio(R.Succeeded, "The references hold and every collection is streaming", g);
}

/** A blocking reference names itself; any other blocker passes its own reason on. */
function blockerReason(blocker: ConditionUpdate): string {
  if (blocker.type === C.KubeProviderReady) return R.KubeProviderNotReady;
  if (blocker.type === C.GitBranchReady) return R.GitBranchNotReady;
  return blocker.reason;
}

/** What decides a reconcile.configbutler.ai/requestedAt on a GitTarget. */
export interface RequestFacts {
  /** The annotation's value. */
  requested: string | undefined;
  /** status.lastHandledReconcileAt. */
  lastHandled: string | undefined;
  /** The value this process last asked the branch worker to read the folder again for. */
  asked: string | undefined;
  /** A branch worker writes the folder. */
  attached: boolean;
  /** The value whose folder the branch worker last read again. */
  folderRead: string | undefined;
}

/**
 * A new requestedAt re-checks the target now: this reconcile reads its references again, and the
 * branch worker, if one writes the folder, fetches and reads the folder again. It is recorded as
 * handled once the whole re-check is done, so a person who sees their value in
 * status.lastHandledReconcileAt reads conditions that answer it.
 */
export function reconcileRequest(f: RequestFacts): {
  /** The value to ask the branch worker to read the folder again for, if it must be asked. */
  ask: string | undefined;
  /** What status.lastHandledReconcileAt records now. */
  handled: string | undefined;
} {
  if (f.requested === undefined || f.requested === f.lastHandled)
    return { ask: undefined, handled: f.lastHandled };
  if (!f.attached) return { ask: undefined, handled: f.requested };
  return {
    ask: f.asked === f.requested ? undefined : f.requested,
    handled: f.folderRead === f.requested ? f.requested : f.lastHandled,
  };
}
