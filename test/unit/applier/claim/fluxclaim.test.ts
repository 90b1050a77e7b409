import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ApplyOperation, FluxClaim } from "../../../../generated/v1alpha3/index.ts";
import type { Verdict } from "../../../../internal/applier/decide/eligibility.ts";
import type { KustomizationView } from "../../../../internal/applier/flux/view.ts";
import {
  decideFluxClaim,
  holdsApplier,
  fluxClaimFinalizer,
  type FluxClaimWorld,
} from "../../../../internal/applier/claim/fluxclaim.ts";
import { releaseBudgetMs } from "../../../../internal/applier/claim/claimstatus.ts";

const now = new Date("2026-12-02T10:00:00Z");
const bound: Verdict = { kind: "bound", targets: [{ ref: { namespace: "shop", name: "web" }, uid: "u1" }] };

function claim(
  facts: { holding?: boolean; deleting?: boolean; status?: FluxClaim["status"] } = {},
): FluxClaim {
  return {
    apiVersion: "configbutler.ai/v1alpha3",
    kind: "FluxClaim",
    metadata: {
      name: "apps",
      namespace: "shop",
      generation: 1,
      ...(facts.holding ? { finalizers: [fluxClaimFinalizer] } : {}),
      ...(facts.deleting ? { deletionTimestamp: now } : {}),
    },
    spec: { kubeProviderRef: { name: "self" }, kustomizationRef: { name: "apps" } },
    ...(facts.status ? { status: facts.status } : {}),
  };
}

function kustomization(facts: Partial<KustomizationView> = {}): KustomizationView {
  return {
    ref: { namespace: "shop", name: "apps" },
    uid: "k1",
    resourceVersion: "10",
    suspended: false,
    source: { kind: "GitRepository", namespace: "shop", name: "state" },
    suspendAppliedBy: [],
    heldByUs: false,
    ...facts,
  };
}

const held = (facts: Partial<KustomizationView> = {}) =>
  kustomization({ heldByUs: true, suspended: true, requestedAt: "t0", lastHandled: "t0", ...facts });

function world(overrides: Partial<FluxClaimWorld> = {}): FluxClaimWorld {
  return {
    claim: claim(),
    now,
    verdict: bound,
    kustomization: kustomization(),
    applierMissing: false,
    successor: false,
    token: "t1",
    ...overrides,
  };
}

const condition = (decision: ReturnType<typeof decideFluxClaim>, type: string) =>
  decision.conditions.find((c) => c.type === type);

describe("FluxClaim: adoption", () => {
  it("a claim nothing names is Ready and NotReferenced, and holds nothing", () => {
    const decision = decideFluxClaim(world({ verdict: { kind: "notReferenced" }, kustomization: undefined }));
    assert.equal(decision.step.kind, "none");
    assert.equal(condition(decision, "Configured")?.status, "Unknown");
    assert.equal(condition(decision, "Configured")?.reason, "NotReferenced");
    assert.equal(condition(decision, "Ready")?.status, "True");
  });

  it("the finalizer goes on before the first write, and records how the Kustomization stood", () => {
    const decision = decideFluxClaim(world({ kustomization: kustomization({ suspended: true }) }));
    assert.equal(decision.step.kind, "addFinalizer");
    assert.equal(decision.previousSuspendState, "Suspended");
  });

  it("a Configured claim suspends its Kustomization with a token, and an Adopted Event", () => {
    const decision = decideFluxClaim(
      world({ claim: claim({ holding: true, status: { previousSuspendState: "Active" } }) }),
    );
    assert.deepEqual(decision.step, { kind: "suspend", token: "t1" });
    assert.equal(decision.event?.reason, "Adopted");
    assert.equal(condition(decision, "InControl")?.reason, "Suspending");
  });

  it("it is InControl and Ready only once Flux has handled the suspend's token", () => {
    const waiting = decideFluxClaim(
      world({ claim: claim({ holding: true }), kustomization: held({ lastHandled: "t-old" }) }),
    );
    assert.equal(condition(waiting, "InControl")?.status, "Unknown");
    assert.equal(condition(waiting, "Ready")?.status, "Unknown");
    const handled = decideFluxClaim(world({ claim: claim({ holding: true }), kustomization: held() }));
    assert.equal(condition(handled, "InControl")?.reason, "Suspended");
    assert.equal(condition(handled, "Ready")?.status, "True");
    assert.equal(handled.soon, false);
  });

  it("a manifest that applies spec.suspend makes the claim SuspendOwnedElsewhere, and nothing is held", () => {
    const decision = decideFluxClaim(
      world({ kustomization: kustomization({ suspendAppliedBy: ["kustomize-controller"] }) }),
    );
    assert.equal(decision.step.kind, "none");
    assert.equal(condition(decision, "Configured")?.reason, "SuspendOwnedElsewhere");
    assert.match(condition(decision, "Configured")!.message, /kustomize-controller/);
    assert.equal(condition(decision, "Stalled")?.status, "True");
  });

  it("a claim behind another in line is HeldByAnotherClaim and writes nothing", () => {
    const decision = decideFluxClaim(world({ heldBy: { namespace: "shop", name: "older" } }));
    assert.equal(decision.step.kind, "none");
    assert.equal(condition(decision, "Configured")?.reason, "HeldByAnotherClaim");
  });
});

describe("FluxClaim: an external resume is suspended again", () => {
  it("a resume with no branch worker's operation in flight is suspended again, with an Event, and followed", () => {
    const decision = decideFluxClaim(
      world({ claim: claim({ holding: true }), kustomization: held({ suspended: false }) }),
    );
    assert.deepEqual(decision.step, { kind: "suspend", token: "t1" });
    assert.equal(decision.event?.reason, "ClaimedResourceReconciled");
    assert.equal(decision.operation?.phase, "Unresolved");
    assert.equal(decision.operation?.suspendToken, "t1");
    assert.equal(decision.operation?.requestToken, undefined);
  });

  it("a resume by merge patch, which takes spec.suspend from our entry, is still an external resume", () => {
    const inControl = {
      type: "InControl",
      status: "True" as const,
      reason: "Suspended",
      message: "",
      lastTransitionTime: "2026-12-02T09:00:00Z",
    };
    const decision = decideFluxClaim(
      world({
        claim: claim({ holding: true, status: { conditions: [inControl] } }),
        kustomization: kustomization({ suspended: false }),
      }),
    );
    assert.equal(decision.event?.reason, "ClaimedResourceReconciled");
  });

  it("a branch worker's operation in flight is left alone", () => {
    const status = { operation: { phase: "Running" as const, requestToken: "r1", commit: "abc" } };
    const decision = decideFluxClaim(
      world({ claim: claim({ holding: true, status }), kustomization: held({ suspended: false }) }),
    );
    assert.equal(decision.step.kind, "none");
    assert.equal(condition(decision, "InControl")?.reason, "Applying");
  });

  it("the external apply completes once its suspend is handled", () => {
    const status = { operation: { phase: "Unresolved" as const, suspendToken: "t0" } };
    const decision = decideFluxClaim(
      world({
        claim: claim({ holding: true, status }),
        kustomization: held({
          ready: { type: "Ready", status: "True" },
          lastAppliedRevision: "main@sha1:abc",
        }),
      }),
    );
    assert.equal(decision.operation?.phase, "Succeeded");
    assert.match(decision.operation?.message ?? "", /main@sha1:abc/);
  });
});

describe("FluxClaim: hand-back", () => {
  const releasing = (overrides: Partial<FluxClaimWorld>) =>
    decideFluxClaim(
      world({
        verdict: { kind: "notReferenced" },
        claim: claim({ holding: true, status: { previousSuspendState: "Active" } }),
        ...overrides,
      }),
    );

  it("a claim no eligible GitTarget names anymore releases spec.suspend to Flux once the suspend is handled", () => {
    const decision = releasing({ kustomization: held() });
    assert.equal(decision.step.kind, "release");
    assert.equal(condition(decision, "InControl")?.reason, "Releasing");
  });

  it("an apply that has it resumed is suspended first", () => {
    assert.deepEqual(releasing({ kustomization: held({ suspended: false }) }).step, {
      kind: "suspend",
      token: "t1",
    });
  });

  it("once Flux owns spec.suspend again the finalizer goes", () => {
    const decision = releasing({ kustomization: kustomization() });
    assert.equal(decision.step.kind, "removeFinalizer");
    assert.equal(condition(decision, "InControl")?.reason, "Released");
    assert.equal(decision.previousSuspendState, null);
  });

  it("a Kustomization suspended before the claim held it stays suspended", () => {
    const decision = releasing({
      claim: claim({ holding: true, status: { previousSuspendState: "Suspended" } }),
      kustomization: held(),
    });
    assert.equal(decision.step.kind, "removeFinalizer");
    assert.match(condition(decision, "InControl")!.message, /left suspended/);
  });

  it("with another claim in line to take it over, it is left suspended for that one", () => {
    assert.equal(releasing({ kustomization: held(), successor: true }).step.kind, "removeFinalizer");
  });

  it("deleting the claim hands the Kustomization back", () => {
    const decision = decideFluxClaim(
      world({
        claim: claim({ holding: true, deleting: true, status: { previousSuspendState: "Active" } }),
        kustomization: held(),
      }),
    );
    assert.equal(decision.step.kind, "release");
  });

  it("a reference that returns before the release is done holds the Kustomization again", () => {
    const releasing = {
      type: "InControl",
      status: "False" as const,
      reason: "Releasing",
      message: "",
      lastTransitionTime: "2026-12-02T09:00:00Z",
    };
    const decision = decideFluxClaim(
      world({
        claim: claim({ holding: true, status: { previousSuspendState: "Active", conditions: [releasing] } }),
        kustomization: held(),
      }),
    );
    assert.equal(decision.step.kind, "none");
    assert.equal(condition(decision, "InControl")?.reason, "Suspended");
  });

  it("one that returns after the release adopts it anew", () => {
    const decision = decideFluxClaim(world({ kustomization: kustomization() }));
    assert.equal(decision.step.kind, "addFinalizer");
    assert.equal(decision.previousSuspendState, "Active");
  });

  it("a reference that cannot be judged yet keeps the hold", () => {
    const decision = decideFluxClaim(
      world({
        verdict: { kind: "pending", reason: "NotBound", message: "GitBranch missing" },
        claim: claim({ holding: true }),
        kustomization: held(),
      }),
    );
    assert.equal(decision.step.kind, "none");
    assert.equal(condition(decision, "InControl")?.reason, "NotConfigured");
    assert.match(condition(decision, "InControl")!.message, /left suspended under gitops-reverser/);
  });

  it("a Kustomization that is gone lets the claim go", () => {
    assert.equal(releasing({ kustomization: undefined, applierMissing: true }).step.kind, "removeFinalizer");
  });

  it("a hand-back unfinished after 10 minutes lets the claim go with ReleaseFailed, saying where it was left", () => {
    const decision = releasing({
      kustomization: undefined,
      releasingSince: new Date(now.getTime() - releaseBudgetMs),
    });
    assert.equal(decision.step.kind, "removeFinalizer");
    assert.equal(decision.event?.reason, "ReleaseFailed");
    assert.equal(decision.event?.type, "Warning");
  });

  it("an operation still in flight at the hand-back ends Failed", () => {
    const status = {
      previousSuspendState: "Active" as const,
      operation: { phase: "Running" as const, requestToken: "r1" },
    };
    const decision = releasing({ claim: claim({ holding: true, status }), kustomization: kustomization() });
    assert.equal(decision.operation?.phase, "Failed");
  });

  it("a manager that applies spec.suspend keeps it: the claim only gives its share up", () => {
    const decision = releasing({ verdict: bound, kustomization: held({ suspendAppliedBy: ["helm"] }) });
    assert.equal(decision.step.kind, "giveUp");
  });
});

describe("FluxClaim: an operation nobody follows", () => {
  const running = {
    phase: "Running" as const,
    requestToken: "r1",
    commit: "c1",
    requestedAt: now.toISOString(),
  };
  const holding = (operation: ApplyOperation | undefined) =>
    claim({
      holding: true,
      status: {
        previousSuspendState: "Active",
        operation,
        conditions: [
          {
            type: "InControl",
            status: "True",
            reason: "Applying",
            message: "",
            lastTransitionTime: now.toISOString(),
          },
        ],
      },
    });

  it("a worker's operation followed, or unfollowed for less than a minute, is left to run", () => {
    for (const unfollowedMs of [0, 59_000]) {
      const decision = decideFluxClaim(
        world({ claim: holding(running), kustomization: held({ suspended: false }), unfollowedMs }),
      );
      assert.equal(decision.step.kind, "none");
      assert.equal(condition(decision, "InControl")?.reason, "Applying");
    }
  });

  it("unfollowed for a minute, it is suspended with OperationUnfollowed, then ends Failed once that is handled", () => {
    const first = decideFluxClaim(
      world({ claim: holding(running), kustomization: held({ suspended: false }), unfollowedMs: 60_000 }),
    );
    assert.deepEqual(first.step, { kind: "suspend", token: "t1" });
    assert.equal(first.event?.reason, "OperationUnfollowed");
    assert.equal(first.operation?.phase, "Unresolved");
    assert.equal(first.operation?.suspendToken, "t1");
    const settled = decideFluxClaim(
      world({
        claim: holding(first.operation),
        kustomization: held({ requestedAt: "t1", lastHandled: "t1" }),
        unfollowedMs: 61_000,
      }),
    );
    assert.equal(settled.step.kind, "none");
    assert.equal(settled.operation?.phase, "Failed");
    assert.match(settled.operation?.message ?? "", /Nobody followed/);
  });

  it("one recorded and never resumed (the process stopped between the record and the resume) ends Failed", () => {
    const requested = { ...running, phase: "Requested" as const };
    const first = decideFluxClaim(
      world({ claim: holding(requested), kustomization: held(), unfollowedMs: 60_000 }),
    );
    assert.equal(first.step.kind, "suspend");
    const settled = decideFluxClaim(
      world({
        claim: holding(first.operation),
        kustomization: held({ requestedAt: "t1", lastHandled: "t1" }),
        unfollowedMs: 60_000,
      }),
    );
    assert.equal(settled.operation?.phase, "Failed");
  });
});

describe("FluxClaim: when a branch worker may ask it to apply", () => {
  const withInControl = (reason: string, holding = true) =>
    claim({
      holding,
      status: {
        conditions: [
          { type: "InControl", status: "True", reason, message: "", lastTransitionTime: now.toISOString() },
        ],
      },
    });

  it("a FluxClaim that is not InControl=True (still adopting, releasing) is not resumed: it holds its Kustomization only while Suspended or Applying, with its finalizer", () => {
    for (const reason of ["Suspended", "Applying"]) assert.equal(holdsApplier(withInControl(reason)), true);
    for (const reason of ["Suspending", "Releasing", "NotConfigured", "NotReferenced", "Released"])
      assert.equal(holdsApplier(withInControl(reason)), false, reason);
    assert.equal(holdsApplier(withInControl("Suspended", false)), false, "no finalizer: never adopted");
  });
});
