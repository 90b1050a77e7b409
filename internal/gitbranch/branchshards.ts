// The operator's shards: with more than one replica, each repository branch (a normalized
// repository URL and a branch name) is one shard, held by one replica at a time. A repository
// branch, not a GitBranch, because the branch claim that picks which GitBranch writes it is
// decided in memory from every GitBranch naming it, so they must all live on one replica. Every
// object whose work runs through a branch worker belongs to its branch's shard: the GitBranch,
// the GitTargets that write through it, their CommitRequests, and an applier claim (by the first
// GitTarget naming it). An object whose branch cannot be told (a missing GitProvider) belongs to
// no shard, and the leader handles it.
import {
  resourceTypes,
  type CommitRequest,
  type GitBranch,
  type GitProvider,
  type GitTarget,
} from "../../generated/v1alpha3/index.ts";
import { branchKeyString } from "./branchclaim.ts";
import { providerRefOf } from "./admission.ts";
import { informerSource } from "../kube/sources.ts";
import type { Request } from "../operator/controller.ts";
import type { SharedInformer } from "../operator/informer.ts";
import type { Manager } from "../operator/manager.ts";
import { normalizeRepositoryUrl } from "../types/repourl.ts";
import { keyOf, parseKey, refOf } from "../types/names.ts";

export class BranchShards {
  private readonly branches: SharedInformer<GitBranch>;
  private readonly providers: SharedInformer<GitProvider>;
  private readonly targets: SharedInformer<GitTarget>;

  constructor(manager: Manager) {
    const kc = manager.kubeConfig;
    this.branches = manager.informer<GitBranch>(informerSource(kc, resourceTypes.GitBranch));
    this.providers = manager.informer<GitProvider>(informerSource(kc, resourceTypes.GitProvider));
    this.targets = manager.informer<GitTarget>(informerSource(kc, resourceTypes.GitTarget));
  }

  /** Every repository branch some GitBranch names: the shards there are. */
  wanted(): string[] {
    const shards = this.branches.list().map((b) => this.ofGitBranch(b));
    return [...new Set(shards.filter((s): s is string => s !== undefined))];
  }

  /** The GitBranches (namespace/name) of a repository branch. */
  gitBranchesOf(shard: string): string[] {
    return this.branches
      .list()
      .filter((b) => this.ofGitBranch(b) === shard)
      .map((b) => keyOf({ namespace: b.metadata.namespace!, name: b.metadata.name! }));
  }

  /** The GitTargets that write a repository branch. */
  gitTargetsOf(shard: string): Request[] {
    return this.targets
      .list()
      .map((t) => ({ namespace: t.metadata.namespace!, name: t.metadata.name! }))
      .filter((t) => this.target(t) === shard);
  }

  /** A GitBranch's repository branch. */
  readonly branch = (request: Request): string | undefined => {
    const branch = this.branches.get(request.name, request.namespace);
    return branch && this.ofGitBranch(branch);
  };

  /** A GitTarget's: its GitBranch's. */
  readonly target = (request: Request): string | undefined => {
    const target = this.targets.get(request.name, request.namespace);
    return target && this.branch(refOf(target.spec.gitBranchRef, target.metadata.namespace!));
  };

  /** A GitBranch (namespace/name key)'s, for the branch workers. */
  readonly branchKey = (key: string): string | undefined => this.branch(parseKey(key));

  /** A CommitRequest's: the GitTarget it saves a window of (`namespace` where it names none). */
  targetOf(ref: { namespace?: string; name: string }, namespace: string): string | undefined {
    return this.target({ namespace: ref.namespace ?? namespace, name: ref.name });
  }

  /** An applier claim's: the first GitTarget (by namespace/name) whose applierClaimRef names it. */
  claim(kind: string): (request: Request) => string | undefined {
    return (request) => {
      const naming = this.targets
        .list(request.namespace)
        .filter((t) => t.spec.applierClaimRef?.kind === kind && t.spec.applierClaimRef.name === request.name)
        .map((t) => ({ namespace: t.metadata.namespace!, name: t.metadata.name! }))
        .sort((a, b) => keyOf(a).localeCompare(keyOf(b)));
      return naming[0] && this.target(naming[0]);
    };
  }

  private ofGitBranch(branch: GitBranch): string | undefined {
    const ref = providerRefOf(branch);
    const provider = this.providers.get(ref.name, ref.namespace);
    if (!provider) return undefined;
    return branchKeyString({
      repository: normalizeRepositoryUrl(provider.spec.url),
      branch: branch.spec.branch,
    });
  }
}

/** A CommitRequest's shard: the GitTarget it saves a window of (its own namespace where it names none). */
export function commitRequestShard(shards: BranchShards, request: CommitRequest | undefined) {
  return request && shards.targetOf(request.spec.gitTargetRef, request.metadata.namespace!);
}
