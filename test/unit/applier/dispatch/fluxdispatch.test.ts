import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { GitTarget } from "../../../../generated/v1alpha3/index.ts";
import type { Attempt } from "../../../../internal/applier/decide/due.ts";
import type { KustomizationView } from "../../../../internal/applier/flux/view.ts";
import { stillAsking } from "../../../../internal/applier/dispatch/dispatch.ts";
import { handled, rejection } from "../../../../internal/applier/dispatch/fluxdispatch.ts";

const target = (uid: string, spec: Partial<GitTarget["spec"]> = {}, deleting = false): GitTarget =>
  ({
    metadata: { namespace: "shop", name: uid, uid, ...(deleting ? { deletionTimestamp: new Date() } : {}) },
    spec: { applierClaimRef: { kind: "FluxClaim", name: "apps" }, ...spec },
  }) as GitTarget;

const attempt: Attempt = {
  claim: { kind: "FluxClaim", namespace: "shop", name: "apps" },
  commit: "c1",
  token: "w1",
  targets: [
    { uid: "a", ref: { namespace: "shop", name: "a" }, reason: "ForeignCommit" },
    { uid: "b", ref: { namespace: "shop", name: "b" }, reason: "Refusal" },
  ],
};

const view = (facts: Partial<KustomizationView> = {}): KustomizationView => ({
  ref: { namespace: "shop", name: "apps" },
  uid: "k1",
  resourceVersion: "1",
  suspended: true,
  source: { kind: "GitRepository", namespace: "shop", name: "state" },
  suspendAppliedBy: [],
  heldByUs: true,
  ...facts,
});

describe("every attempt rechecks its targets and its applier", () => {
  it("asks only for targets that are the same incarnation, still name the claim, and for a Refusal still consent", () => {
    const still = (a?: GitTarget, b?: GitTarget) => stillAsking(attempt, [a, b]).map((t) => t.uid);
    assert.deepEqual(still(target("a"), target("b", { onRefusal: "Reapply" })), ["a", "b"]);
    assert.deepEqual(still(target("a"), target("b", { onRefusal: "Ignore" })), ["a"], "consent withdrawn");
    assert.deepEqual(
      still({ ...target("a"), metadata: { ...target("a").metadata, uid: "a2" } }, undefined),
      [],
      "re-created",
    );
    assert.deepEqual(still(target("a", {}, true), undefined), [], "being deleted");
    assert.deepEqual(
      still(target("a", { applierClaimRef: { kind: "FluxClaim", name: "other" } }), undefined),
      [],
    );
  });

  it("never resumes a Kustomization whose source fetches another repository or branch, or whose suspend another manager applies", () => {
    const branch = { url: "https://git.example/org/state.git", branch: "main" };
    const repository = {
      ref: { namespace: "shop", name: "state" },
      url: "https://git.example/org/state",
      branch: "main",
    };
    assert.equal(rejection(view(), repository, branch), undefined, "the same repository, however spelled");
    assert.match(rejection(view(), { ...repository, branch: "dev" }, branch) ?? "", /not https/);
    assert.match(rejection(view(), undefined, branch) ?? "", /does not exist/);
    assert.match(rejection(view({ suspendAppliedBy: ["helm"] }), repository, branch) ?? "", /helm/);
    assert.match(
      rejection(
        view({ source: { kind: "OCIRepository", namespace: "shop", name: "x" } }),
        repository,
        branch,
      ) ?? "",
      /OCIRepository/,
    );
  });

  it("a token is handled when Flux handled it, or a token stamped over it", () => {
    assert.equal(handled(view({ requestedAt: "t1", lastHandled: "t0" }), "t1", "t0"), false);
    assert.equal(handled(view({ requestedAt: "t1", lastHandled: "t1" }), "t1", "t0"), true);
    assert.equal(
      handled(view({ requestedAt: "flux", lastHandled: "flux" }), "t1", "t0"),
      true,
      "flux reconcile over ours",
    );
    assert.equal(
      handled(view({ requestedAt: "t0", lastHandled: "t0" }), "t1", "t0"),
      false,
      "the old token is not ours",
    );
  });
});
