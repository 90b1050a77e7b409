import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { KubeProvider } from "../../../../generated/v1alpha3/index.ts";
import {
  judgeBinding,
  judgeConfig,
  type ClaimConfig,
  type ReferringTarget,
} from "../../../../internal/applier/decide/eligibility.ts";

const provider = (spec: Partial<KubeProvider["spec"]> = {}): KubeProvider =>
  ({
    apiVersion: "configbutler.ai/v1alpha3",
    kind: "KubeProvider",
    metadata: { name: "self", namespace: "shop" },
    spec: { inCluster: true, ...spec },
  }) as KubeProvider;

const target = (name: string, writes?: ReferringTarget["writes"]): ReferringTarget => ({
  ref: { namespace: "shop", name },
  uid: `uid-${name}`,
  ...(writes ? { writes } : {}),
});

const config = (overrides: Partial<ClaimConfig> = {}): ClaimConfig => ({
  claim: { namespace: "shop", name: "apps" },
  targets: [target("web", { repository: "https://git.example/state", branch: "main" })],
  providerRef: { namespace: "shop", name: "self" },
  provider: provider(),
  namespaceLabels: {},
  applier: { namespace: "shop", name: "apps" },
  ...overrides,
});

const source = {
  repository: "https://git.example/state",
  branch: "main",
  describe: "GitRepository shop/state fetches it",
};

describe("a claim acts only while an eligible GitTarget references it", () => {
  it("a claim no GitTarget names is NotReferenced, and reads nothing", () => {
    assert.deepEqual(judgeConfig(config({ targets: [] })), { kind: "notReferenced" });
  });

  it("a claim whose KubeProvider is missing is refused", () => {
    assert.equal(judgeConfig(config({ provider: undefined }))?.kind, "refused");
  });

  it("by default, claims in the provider's namespace may hold appliers in the namespace of the same name", () => {
    assert.equal(judgeConfig(config()), undefined);
    const verdict = judgeConfig(config({ applier: { namespace: "flux-system", name: "apps" } }));
    assert.equal(verdict?.kind === "refused" && verdict.reason, "ApplierNamespaceNotAllowed");
  });

  it("a claim from a namespace the provider's allowedApplierClaims does not admit is NamespaceNotAuthorized", () => {
    const verdict = judgeConfig(config({ provider: provider({ allowedApplierClaims: [] }) }));
    assert.equal(verdict?.kind === "refused" && verdict.reason, "NamespaceNotAuthorized");
  });

  it("applierNamespaces admits the applier's namespace in the provider's cluster", () => {
    const grants = [
      {
        consumerNamespaces: { from: "Same" as const },
        applierNamespaces: { from: "Names" as const, names: ["flux-system"] },
      },
    ];
    const verdict = judgeConfig(
      config({
        provider: provider({ allowedApplierClaims: grants }),
        applier: { namespace: "flux-system", name: "apps" },
      }),
    );
    assert.equal(verdict, undefined);
  });

  it("a GitTarget writing the repository and branch the source fetches binds the claim", () => {
    const verdict = judgeBinding(config().targets, source);
    assert.equal(verdict.kind, "bound");
  });

  it("GitTargets that all write elsewhere are SourceMismatch, with what to change", () => {
    const verdict = judgeBinding(
      [target("web", { repository: "https://git.example/state", branch: "dev" })],
      source,
    );
    assert.equal(verdict.kind === "refused" && verdict.reason, "SourceMismatch");
    assert.match(verdict.kind === "refused" ? verdict.message : "", /branch dev/);
  });

  it("none eligible while one cannot be judged yet is NotBound, never a refusal", () => {
    const verdict = judgeBinding(
      [target("web", { repository: "https://git.example/other", branch: "main" }), target("api")],
      source,
    );
    assert.equal(verdict.kind === "pending" && verdict.reason, "NotBound");
  });

  it("a source pinned to a tag or commit binds no GitTarget", () => {
    const { branch: _, ...pinned } = source;
    assert.equal(judgeBinding(config().targets, pinned).kind, "refused");
  });
});
