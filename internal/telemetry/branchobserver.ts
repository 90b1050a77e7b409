// What a branch worker reports, as metrics and logs: the operator's one observer of a branch
// (internal/git/worker/observer.ts's BranchObserver), made per GitBranch so its labels are read
// from the key once. The write path reports through it as the watch side counts through
// instruments.ts: every metric, label and value here is documented in docs/metrics.md.
//
// The interface lives with the worker, above this room, so this is written to its shape rather
// than against it, with the nouns it needs as labels: a reason or an outcome is a label value.
// controllers/writeside.ts hands it to the WorkerManager, where the compiler checks it fits.
import type { ResourceIdentity } from "../types/identity.ts";
import { keyOf, parseKey } from "../types/names.ts";
import type { Author } from "../types/signature.ts";
import {
  applyOwnershipConflicts,
  commitWindows,
  gitCommitFailures,
  gitCommits,
  gitDocuments,
  gitFetches,
  gitPushes,
  gitQueueAppends,
  gitQueueReplayed,
  placementRefusals,
  placements,
  secretEncryptions,
  writesDropped,
} from "./instruments.ts";
import type { Logger } from "./logger.ts";

/** The source label of gitopsreverser_placements_total, by rung of the placement ladder. */
const placementSourceLabel = {
  Declared: "declared",
  KustomizeRoot: "kustomize",
  BuiltIn: "builtin",
} as const;

/** What is read of a decided write: its GitTarget, as namespace/name, and who authored it. */
interface Write {
  target: { key: string };
  author?: Pick<Author, "kind">;
}

function targetLabels(key: string) {
  const { namespace, name } = parseKey(key);
  return { gittarget_namespace: namespace, gittarget_name: name };
}

const resourceOf = (identity: ResourceIdentity) => `${identity.group}/${identity.resource}`;

/** The metrics and logs of the GitBranch `branchKey` (namespace/name) and the GitTargets it writes. */
export function branchTelemetry(branchKey: string, logger: Logger) {
  const { namespace, name } = parseKey(branchKey);
  const branch = { gitbranch_namespace: namespace, gitbranch_name: name };
  return {
    windowClosed: (reason: string) => commitWindows.inc({ ...branch, close_reason: reason }),
    git: ({ operation, outcome }: { operation: "fetch" | "push" | "cycle"; outcome: string }) => {
      if (operation === "fetch") gitFetches.inc({ ...branch, outcome });
      else if (operation === "push") gitPushes.inc({ ...branch, outcome });
      else gitCommitFailures.inc({ ...branch, reason: outcome });
    },
    queue: (event: string, count: number) => {
      if (event === "replayed") gitQueueReplayed.inc(branch, count);
      else gitQueueAppends.inc({ ...branch, outcome: event }, count);
    },
    document: (write: Write, outcome: string) =>
      gitDocuments.inc({ outcome, ...targetLabels(write.target.key) }),
    committed: (write: Write) =>
      gitCommits.inc({ author_kind: write.author?.kind ?? "none", ...targetLabels(write.target.key) }),
    refused: (write: Write, identity: ResourceIdentity, reason: string, message: string) => {
      logger.error("refused to write a resource", {
        gitTarget: write.target.key,
        resource: resourceOf(identity),
        object: keyOf(identity),
        reason,
        message,
      });
      placementRefusals.inc({ reason, ...targetLabels(write.target.key) });
      if (reason === "encryption_failed")
        secretEncryptions.inc({ outcome: "failed", ...targetLabels(write.target.key) });
    },
    encrypted: (write: Write, _identity: ResourceIdentity, outcome: string) =>
      secretEncryptions.inc({ outcome, ...targetLabels(write.target.key) }),
    // Counted as git_documents_total{outcome="healed"} through document.
    healed: (write: Write, identity: ResourceIdentity, healed: string) =>
      logger.warn("rewrote a file Go's YAML readers refused, from the live object", {
        gitTarget: write.target.key,
        object: `${identity.kind} ${identity.namespace ? `${identity.namespace}/` : ""}${identity.name}`,
        healed,
      }),
    dropped: (targetKey: string, reason: string, count: number) =>
      writesDropped.inc({ reason, ...targetLabels(targetKey) }, count),
    placed: (
      targetKey: string,
      { group, version, resource }: { group: string; version: string; resource: string },
      source: keyof typeof placementSourceLabel,
    ) =>
      placements.inc({
        source: placementSourceLabel[source],
        group,
        version,
        resource,
        ...targetLabels(targetKey),
      }),
    excluded: (targetKey: string, excluded: readonly ResourceIdentity[]) => {
      for (const identity of excluded) {
        logger.info("kept another applier's object out of a coordinated folder", {
          gitTarget: targetKey,
          resource: resourceOf(identity),
          object: keyOf(identity),
        });
        applyOwnershipConflicts.inc(targetLabels(targetKey));
      }
    },
  };
}
