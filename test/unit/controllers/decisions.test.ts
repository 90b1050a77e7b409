import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { GitBranch, GitTarget, KubeProvider, WatchRule } from "../../../generated/v1alpha3/index.ts";
import { targetConditions, validate, type TargetWorld } from "../../../internal/gittarget/decide.ts";
import { overlappingOlder, pathsOverlap } from "../../../internal/gittarget/paths.ts";
import {
  auditRouteOf,
  clientLimits,
  inClusterConsented,
  providerConditions,
} from "../../../internal/kubeprovider/decide.ts";
import { gateRules } from "../../../internal/rules/gate.ts";
import { compileClusterWatchRule, compileWatchRule } from "../../../internal/rulestore/compile.ts";
import { readyStatus } from "./fixtures.ts";

const provider = (spec: KubeProvider["spec"] = { inCluster: {} }): KubeProvider => ({
  apiVersion: "configbutler.ai/v1alpha3",
  kind: "KubeProvider",
  metadata: { name: "p", namespace: "team-a", generation: 1 },
  spec,
});

const target = (name: string, path: string, created: string, namespace = "team-a"): GitTarget => ({
  apiVersion: "configbutler.ai/v1alpha3",
  kind: "GitTarget",
  metadata: { name, namespace, uid: name, creationTimestamp: created as unknown as Date, generation: 1 },
  spec: {
    gitBranchRef: { name: "main", namespace: "team-a" },
    kubeProviderRef: { name: "p", namespace: "team-a" },
    path,
  },
});

const branch: GitBranch = {
  apiVersion: "configbutler.ai/v1alpha3",
  kind: "GitBranch",
  metadata: { name: "main", namespace: "team-a" },
  spec: { gitProviderRef: { name: "repo" }, branch: "main" },
};

describe("KubeProvider decisions", () => {
  it("honors inCluster only for a provider listed by exact namespace/name", () => {
    assert.equal(inClusterConsented(provider(), ["team-a/p"]), true);
    assert.equal(inClusterConsented(provider(), ["team-a/other", "p"]), false);
  });

  it("defaults the audit route to <namespace>.<name>", () => {
    assert.equal(auditRouteOf(provider()), "team-a.p");
    assert.equal(auditRouteOf(provider({ inCluster: {}, attribution: { auditRoute: "shared" } })), "shared");
  });

  it("throttles as spec.client says, with the schema's defaults when it or a field is omitted", () => {
    assert.deepEqual(clientLimits(undefined), { qps: 20, burst: 40, timeoutMs: 30_000 });
    assert.deepEqual(clientLimits({ qps: 2 }), { qps: 2, burst: 40, timeoutMs: 30_000 });
    assert.deepEqual(clientLimits({ qps: 5, burst: 7, timeout: "1m30s" }), {
      qps: 5,
      burst: 7,
      timeoutMs: 90_000,
    });
    assert.equal(clientLimits({ timeout: "0s" }).timeoutMs, 0, "0s: no timeout, as in client-go");
  });

  it("a refusal a human must fix is Stalled; a missing Secret is waited for", () => {
    const stalled = providerConditions(
      { kind: "refused", reason: "UnsafeKubeconfig", message: "m", transient: false },
      1,
    );
    assert.equal(stalled.find((c) => c.type === "Stalled")?.status, "True");
    const waiting = providerConditions(
      { kind: "refused", reason: "SecretNotFound", message: "m", transient: true },
      1,
    );
    assert.equal(waiting.find((c) => c.type === "Reconciling")?.status, "True");
  });
});

describe("GitTarget decisions", () => {
  it("paths overlap when one contains the other, segment by segment; '.' overlaps everything", () => {
    assert.equal(pathsOverlap("clusters/a", "clusters/a/apps"), true);
    assert.equal(pathsOverlap("clusters/a", "clusters/ab"), false);
    assert.equal(pathsOverlap(".", "anything"), true);
    assert.equal(pathsOverlap("a", "a"), true);
  });

  it("the older target keeps an overlapping folder; the younger is refused", () => {
    const older = target("older", "x", "2026-01-01T00:00:00Z");
    const younger = target("younger", "x/y", "2026-02-01T00:00:00Z");
    assert.equal(overlappingOlder(younger, [older, younger])?.metadata.name, "older");
    assert.equal(overlappingOlder(older, [older, younger]), undefined);
  });

  const world = (overrides: Partial<TargetWorld> = {}): TargetWorld => {
    const t = target("t", "p", "2026-01-01T00:00:00Z");
    return { target: t, provider: provider(), branch, namespaceLabels: {}, sameBranch: [t], ...overrides };
  };

  it("checks references in order: provider, its grant, branch, its grant, overlap", () => {
    assert.equal(validate(world({ provider: undefined }))?.reason, "KubeProviderNotFound");
    assert.equal(
      validate(world({ provider: provider({ inCluster: {}, allowedGitTargets: [] }) }))?.reason,
      "NamespaceNotAuthorized",
    );
    assert.equal(validate(world({ branch: undefined }))?.reason, "GitBranchNotFound");
    assert.equal(
      validate(world({ branch: { ...branch, spec: { ...branch.spec, allowedGitTargets: [] } } }))?.reason,
      "NamespaceNotAuthorized",
    );
    assert.equal(validate(world()), undefined);
  });

  it("says on StreamsRunning which followed kinds' server defaults the credential may not prove, and stays Ready", () => {
    const ok = world({
      provider: { ...provider(), status: readyStatus },
      branch: { ...branch, status: readyStatus },
    });
    const clean = { status: "True" as const, reason: "Succeeded", message: "" };
    const write = { attached: true, refused: [], renderGate: clean };
    const streams = { total: 2, running: 2, replaying: 0, blocked: 0 };
    const proven = targetConditions(ok, undefined, { ...streams, unproven: [] }, write);
    assert.equal(proven.find((c) => c.type === "StreamsRunning")?.reason, "Succeeded");
    const unproven = targetConditions(
      ok,
      undefined,
      { ...streams, unproven: ["/services", "apps/deployments"] },
      write,
    );
    const running = unproven.find((c) => c.type === "StreamsRunning");
    assert.deepEqual([running?.status, running?.reason], ["True", "DefaultsProofForbidden"]);
    assert.match(running?.message ?? "", /may not create services, deployments\.apps/);
    assert.equal(unproven.find((c) => c.type === "Ready")?.status, "True");
  });

  it("is Stalled by a folder the acceptance gate refuses, or a render that does not match live: only a person can fix those", () => {
    const ok = world({
      provider: { ...provider(), status: readyStatus },
      branch: { ...branch, status: readyStatus },
    });
    const running = { total: 1, running: 1, replaying: 0, blocked: 0 };
    const clean = { status: "True" as const, reason: "Succeeded", message: "" };
    const refused = targetConditions(ok, undefined, running, {
      attached: true,
      refused: [],
      renderGate: clean,
      folderRefusal: "clusters/a/kustomization.yaml has secretGenerator",
    });
    const accepted = refused.find((c) => c.type === "GitPathAccepted");
    assert.deepEqual([accepted?.status, accepted?.reason], ["False", "UnsupportedContent"]);
    assert.equal(refused.find((c) => c.type === "Stalled")?.status, "True");
    assert.match(refused.find((c) => c.type === "Ready")?.message ?? "", /secretGenerator/);

    const diverged = targetConditions(ok, undefined, running, {
      attached: true,
      refused: [],
      renderGate: { status: "False", reason: "RenderDoesNotMatchLive", message: "ConfigMap a data.x" },
    });
    assert.equal(diverged.find((c) => c.type === "Stalled")?.reason, "RenderDoesNotMatchLive");
    assert.equal(diverged.find((c) => c.type === "Ready")?.status, "False");
  });

  it("a refused folder's RenderMatchesLive points at the refusal, never at collections still replaying", () => {
    const ok = world({
      provider: { ...provider(), status: readyStatus },
      branch: { ...branch, status: readyStatus },
    });
    const running = { total: 2, running: 2, replaying: 0, blocked: 0 };
    const conditions = targetConditions(ok, undefined, running, {
      attached: true,
      refused: [],
      renderGate: { status: "Unknown", reason: "Rechecking", message: "2 of 2 collections still replaying" },
      folderRefusal: "clusters/a/kustomization.yaml has secretGenerator",
    });
    const render = conditions.find((c) => c.type === "RenderMatchesLive");
    assert.deepEqual([render?.status, render?.reason], ["Unknown", "UnsupportedContent"]);
    assert.doesNotMatch(render?.message ?? "", /replaying/);
    assert.match(render?.message ?? "", /GitPathAccepted/);
  });

  it("is Ready only when the references hold, both are Ready and every collection streams", () => {
    const ok = world({
      provider: { ...provider(), status: readyStatus },
      branch: { ...branch, status: readyStatus },
    });
    const running = { total: 2, running: 2, replaying: 0, blocked: 0 };
    const measuredClean = { status: "True" as const, reason: "Succeeded", message: "" };
    const writing = { attached: true, refused: [], renderGate: measuredClean };
    assert.equal(
      targetConditions(ok, undefined, running, writing).find((c) => c.type === "Ready")?.status,
      "True",
    );
    const unattached = targetConditions(ok, undefined, running);
    assert.equal(
      unattached.find((c) => c.type === "GitPathAccepted")?.status,
      "Unknown",
      "no worker writes it yet",
    );
    assert.equal(unattached.find((c) => c.type === "Ready")?.status, "Unknown");
    const refusing = targetConditions(ok, undefined, running, { ...writing, refused: ["secrets apps/db"] });
    assert.equal(
      refusing.find((c) => c.type === "Ready")?.status,
      "True",
      "the rest of the folder is written",
    );
    assert.match(refusing.find((c) => c.type === "EncryptionConfigured")?.message ?? "", /secrets apps\/db/);
    const rechecking = targetConditions(ok, undefined, running, {
      ...writing,
      renderGate: { status: "Unknown", reason: "Rechecking", message: "1 of 2 collections still replaying" },
    });
    assert.equal(rechecking.find((c) => c.type === "Ready")?.status, "Unknown", "live writes are held");
    const replaying = targetConditions(ok, undefined, { ...running, running: 1, replaying: 1 }, writing);
    assert.equal(replaying.find((c) => c.type === "Ready")?.status, "Unknown");
    assert.equal(replaying.find((c) => c.type === "StreamsRunning")?.reason, "InitialReplay");
    const branchNotReady = targetConditions(
      world({ provider: { ...provider(), status: readyStatus } }),
      undefined,
      running,
    );
    assert.equal(branchNotReady.find((c) => c.type === "Ready")?.reason, "GitBranchNotReady");
  });
});

describe("the source-namespace gate", () => {
  const rule = (rules: WatchRule["spec"]["rules"]) =>
    compileWatchRule({
      apiVersion: "configbutler.ai/v1alpha3",
      kind: "WatchRule",
      metadata: { name: "r", namespace: "team-a" },
      spec: { gitTargetRef: { name: "t" }, rules },
    });

  it("admits the rule's own namespace on the provider's default grant, and nothing else", () => {
    const { admitted, refused } = gateRules(
      rule([{ resources: ["configmaps"] }, { resources: ["secrets"], sourceNamespace: "*" }]),
      provider(),
      "team-a",
      {},
    );
    assert.deepEqual(
      admitted.map((r) => r.resources[0]),
      ["configmaps"],
    );
    assert.deepEqual(
      refused.map((r) => r.resources[0]),
      ["secrets"],
    );
  });

  it("admits another namespace, or all, only as the grant's sourceNamespaces say", () => {
    const granted = provider({
      inCluster: {},
      allowedGitTargets: [{ consumerNamespaces: { from: "Same" }, sourceNamespaces: { from: "All" } }],
    });
    assert.equal(
      gateRules(rule([{ resources: ["secrets"], sourceNamespace: "*" }]), granted, "team-a", {}).refused
        .length,
      0,
    );
  });

  it("refuses everything when the provider is missing or does not admit the namespace", () => {
    assert.equal(
      gateRules(rule([{ resources: ["configmaps"] }]), undefined, "team-a", {}).admitted.length,
      0,
    );
    assert.equal(
      gateRules(rule([{ resources: ["configmaps"] }]), provider(), "team-b", {}).admitted.length,
      0,
    );
  });

  it("admits cluster resources only as clusterResources grant them", () => {
    const cluster = compileClusterWatchRule({
      apiVersion: "configbutler.ai/v1alpha3",
      kind: "ClusterWatchRule",
      metadata: { name: "c" },
      spec: {
        gitTargetRef: { name: "t", namespace: "team-a" },
        rules: [{ apiGroups: [""], resources: ["namespaces"] }],
      },
    });
    assert.equal(
      gateRules(cluster, provider(), "team-a", {}).admitted.length,
      0,
      "clusterResources default to none",
    );
    const granted = provider({
      inCluster: {},
      allowedGitTargets: [
        {
          consumerNamespaces: { from: "Same" },
          clusterResources: [{ apiGroups: [""], resources: ["namespaces"] }],
        },
      ],
    });
    assert.equal(gateRules(cluster, granted, "team-a", {}).admitted.length, 1);
  });
});
