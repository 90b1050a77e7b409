import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { gitBranchFinalizer, setupGitBranchController } from "../../../controllers/gitbranch.ts";
import { setupGitProviderController } from "../../../controllers/gitprovider.ts";
import {
  gitBranches,
  gitProviders,
  gitTargets,
  type GitBranch,
  type GitProvider,
} from "../../../generated/v1alpha3/index.ts";
import { BranchClaims } from "../../../internal/gitbranch/branchclaim.ts";
import { normalizeRepositoryUrl } from "../../../internal/types/repourl.ts";
import type { Condition } from "../../../internal/operator/conditions.ts";
import { condition } from "./helpers.ts";
import { Manager } from "../../../internal/operator/manager.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { GitServer } from "../../support/gitserver.ts";
import { installCrds } from "../../support/manifests.ts";
import { eventually, untilYoungerThan } from "../../support/wait.ts";
import { quiet } from "../../support/logger.ts";

const writer = { username: "writer", password: "writer-password-1" };
const reader = { username: "reader", password: "reader-password-1", access: "read" as const };
const apiVersion = "configbutler.ai/v1alpha3" as const;
type Grants = GitProvider["spec"]["allowedGitBranches"];

describe("the GitBranch controller", () => {
  let plane: ControlPlane;
  let git: GitServer;
  let kc: KubeConfig;
  let core: CoreV1Api;
  let manager: Manager;
  let running: Promise<void>;
  let repoUrl: string;
  const claims = new BranchClaims();

  before(async () => {
    [plane, git] = await Promise.all([ControlPlane.start(), GitServer.start({ users: [writer, reader] })]);
    kc = plane.kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    await installCrds(kc);
    repoUrl = await git.createRepository("shared");
    manager = new Manager(kc, { logger: quiet });
    const intervals = { blockedMs: 300, backoffBaseMs: 100, backoffMaxMs: 1_000 };
    setupGitProviderController(manager, { intervals });
    setupGitBranchController(manager, { claims, intervals });
    running = manager.start();
  });
  after(async () => {
    await manager?.stop();
    await running;
    await git?.close();
    await plane?.stop();
  });

  /** A fresh namespace with a Secret holding `user`'s credential. */
  async function namespaceWith(name: string, user: { username: string; password: string }): Promise<string> {
    await core.createNamespace({ body: { metadata: { name } } });
    await core.createNamespacedSecret({
      namespace: name,
      body: {
        metadata: { name: "git-creds" },
        stringData: { username: user.username, password: user.password },
      },
    });
    return name;
  }

  async function applyProvider(
    ns: string,
    name: string,
    allowedGitBranches: Grants,
    url = repoUrl,
  ): Promise<void> {
    await gitProviders(kc).apply(
      {
        apiVersion,
        kind: "GitProvider",
        metadata: { name, namespace: ns },
        spec: { url, secretRef: { name: "git-creds" }, allowedGitBranches },
      },
      "test",
    );
  }

  async function applyBranch(
    ns: string,
    name: string,
    provider: string,
    branch = "main",
  ): Promise<GitBranch> {
    return gitBranches(kc).apply(
      {
        apiVersion,
        kind: "GitBranch",
        metadata: { name, namespace: ns },
        spec: { gitProviderRef: { name: provider }, branch },
      },
      "test",
    );
  }

  /** Waits until the GitBranch's `type` condition has this status (and reason), and returns it. */
  function conditionIs(
    ns: string,
    name: string,
    type: string,
    status: Condition["status"],
    reason?: string,
  ): Promise<GitBranch> {
    return eventually(
      async () => {
        const branch = await gitBranches(kc).get(ns, name);
        const c = condition(branch, type);
        return c?.status === status && (reason === undefined || c.reason === reason) && branch;
      },
      { description: `GitBranch ${ns}/${name} ${type}=${status}${reason ? ` (${reason})` : ""}` },
    );
  }

  const sameNamespace = (...branches: string[]): Grants => [
    { consumerNamespaces: { from: "Same" }, branches },
  ];

  it("Two GitBranches for one branch: the older holds it, and the younger reports BranchConflict; deleting the older lets the younger take it", async () => {
    const ns = await namespaceWith("gb-claim", writer);
    // Two providers spelling one repository differently: the claim sees one repository branch.
    await applyProvider(ns, "dotgit", sameNamespace("main"));
    await applyProvider(ns, "bare", sameNamespace("main"), repoUrl.replace(/\.git$/, ""));

    const first = await applyBranch(ns, "first", "dotgit");
    const holding = await conditionIs(ns, "first", "Ready", "True", "Succeeded");
    assert.equal(condition(holding, "BranchClaimed")?.status, "True");
    assert.equal(condition(holding, "Validated")?.status, "True");
    assert.equal(holding.status?.repository, normalizeRepositoryUrl(repoUrl));
    assert.deepEqual(holding.metadata.finalizers, [gitBranchFinalizer]);
    assert.equal(holding.status?.observedGeneration, holding.metadata.generation);

    await untilYoungerThan(first);
    await applyBranch(ns, "second", "bare");
    const conflicted = await conditionIs(ns, "second", "Ready", "False", "BranchConflict");
    assert.equal(condition(conflicted, "BranchClaimed")?.reason, "BranchConflict");
    assert.equal(condition(conflicted, "Stalled")?.status, "True");
    assert.match(condition(conflicted, "Ready")!.message, /^GitBranch first holds branch "main" of /);
    assert.equal(conflicted.status?.repository, holding.status?.repository);
    assert.equal(condition(await gitBranches(kc).get(ns, "first"), "Ready")?.status, "True");

    // Deleting the holder releases the claim behind its finalizer, and the younger takes over.
    await gitBranches(kc).delete(ns, "first");
    await eventually(async () => (await gitBranches(kc).get(ns, "first")) === undefined, {
      description: "the older GitBranch to be gone once its finalizer ran",
    });
    const taken = await conditionIs(ns, "second", "Ready", "True", "Succeeded");
    assert.equal(condition(taken, "BranchClaimed")?.status, "True");
  });

  it("a read-only credential gets PushSessionFailed and claims nothing", async () => {
    const ns = await namespaceWith("gb-read-only", reader);
    await applyProvider(ns, "shared", sameNamespace("main"));
    await applyBranch(ns, "main", "shared");
    const failed = await conditionIs(ns, "main", "Ready", "False", "PushSessionFailed");
    assert.match(
      condition(failed, "Ready")!.message,
      /refused a push session to the credential in Secret gb-read-only\/git-creds \(403 Forbidden\): it may read the repository but not push to it/,
    );
    assert.equal(condition(failed, "BranchClaimed")?.status, "False");
    assert.equal(
      condition(failed, "Validated")?.status,
      "True",
      "the grants admit it; the remote refused it",
    );
    assert.ok(!condition(failed, "Ready")!.message.includes(reader.password));
    const candidates = claims.candidates({ repository: normalizeRepositoryUrl(repoUrl), branch: "main" });
    assert.ok(!candidates.some((c) => c.namespace === ns), "a GitBranch that cannot push is no candidate");
  });

  it("a branch the grant does not allow gets BranchNotAllowed, until the GitProvider allows it", async () => {
    const ns = await namespaceWith("gb-grants", writer);
    await applyProvider(ns, "shared", sameNamespace("env/*"));
    await applyBranch(ns, "release", "shared", "release/v1");
    const refused = await conditionIs(ns, "release", "Ready", "False", "BranchNotAllowed");
    assert.equal(condition(refused, "Validated")?.reason, "BranchNotAllowed");
    assert.match(
      condition(refused, "Ready")!.message,
      /GitProvider gb-grants\/shared lets namespace gb-grants claim only "env\/\*", and "release\/v1" matches none of them/,
    );

    // A change to the GitProvider re-runs the check: "**" admits release/v1.
    await applyProvider(ns, "shared", sameNamespace("env/*", "release/**"));
    await conditionIs(ns, "release", "Ready", "True", "Succeeded");
  });

  it("a GitProvider without allowedGitBranches admits no namespace, and a missing one is GitProviderNotFound", async () => {
    const ns = await namespaceWith("gb-admission", writer);
    await applyBranch(ns, "early", "later");
    await conditionIs(ns, "early", "Validated", "False", "GitProviderNotFound");

    await applyProvider(ns, "later", undefined);
    const unauthorized = await conditionIs(ns, "early", "Validated", "False", "NamespaceNotAuthorized");
    assert.match(condition(unauthorized, "Ready")!.message, /admits no namespace, not even its own/);
  });

  it("counts the GitTargets that name it, from any namespace", async () => {
    const ns = await namespaceWith("gb-count", writer);
    await core.createNamespace({ body: { metadata: { name: "gb-count-consumer" } } });
    await applyProvider(ns, "shared", sameNamespace("count"));
    await applyBranch(ns, "count", "shared", "count");
    await conditionIs(ns, "count", "Ready", "True");

    const target = (namespace: string, name: string) => ({
      apiVersion,
      kind: "GitTarget" as const,
      metadata: { name, namespace },
      spec: { gitBranchRef: { name: "count", namespace: ns }, kubeProviderRef: { name: "k" }, path: name },
    });
    await gitTargets(kc).apply(target(ns, "local"), "test");
    await gitTargets(kc).apply(target("gb-count-consumer", "remote"), "test");
    const countIs = (n: number) =>
      eventually(async () => (await gitBranches(kc).get(ns, "count"))?.status?.gitTargetCount === n, {
        description: `gitTargetCount ${n}`,
      });
    await countIs(2);
    await gitTargets(kc).delete("gb-count-consumer", "remote");
    await countIs(1);
  });
});
