import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ArgoCDClaim } from "../../../../generated/v1alpha3/index.ts";
import { syncOperation, syncState, withSync } from "../../../../internal/applier/argocd/sync.ts";
import {
  branchOf,
  tokenInfo,
  viewApplication,
  type Application,
  type ApplicationView,
} from "../../../../internal/applier/argocd/view.ts";
import {
  argoCDClaimFinalizer,
  decideArgoCDClaim,
  holdsApplication,
  type ArgoCDClaimWorld,
} from "../../../../internal/applier/claim/argocdclaim.ts";
import type { Verdict } from "../../../../internal/applier/decide/eligibility.ts";

const now = new Date("2026-12-03T10:00:00Z");
const bound: Verdict = { kind: "bound", targets: [{ ref: { namespace: "shop", name: "web" }, uid: "u1" }] };

const app = (spec: Application["spec"], extra: Partial<Application> = {}): Application => ({
  apiVersion: "argoproj.io/v1alpha1",
  kind: "Application",
  metadata: { name: "shop", namespace: "shop", uid: "a1", resourceVersion: "7", ...extra.metadata },
  spec,
  ...(extra.operation ? { operation: extra.operation } : {}),
  ...(extra.status ? { status: extra.status } : {}),
});
const source = { repoURL: "https://git.example/state.git", targetRevision: "main", path: "apps/shop" };
const switchEntry = (manager: string, operation = "Apply") => ({
  manager,
  operation,
  fieldsV1: { "f:spec": { "f:syncPolicy": { "f:automated": { "f:enabled": {} } } } },
});

describe("what the ArgoCDClaim reads of an Application, by Argo CD's own rules", () => {
  it("automated sync is on when syncPolicy.automated is present and enabled is unset or true", () => {
    const on = (automated?: object) =>
      viewApplication(app({ source, ...(automated ? { syncPolicy: { automated } } : {}) }), "gitops-reverser")
        .automatedOn;
    assert.equal(on(undefined), false, "no automated block: off");
    assert.equal(on({}), true, "an empty block: on");
    assert.equal(on({ enabled: true, prune: true }), true);
    assert.equal(
      on({ enabled: false, prune: true }),
      false,
      "enabled: false is the off switch that keeps prune",
    );
  });

  it("tells who applies the switch, an ApplicationSet owner, and a source that cannot be coordinated", () => {
    const view = viewApplication(
      app(
        { source, syncPolicy: { automated: { enabled: false } } },
        {
          metadata: {
            managedFields: [
              switchEntry("gitops-reverser"),
              switchEntry("helm"),
              switchEntry("kubectl-edit", "Update"),
            ],
            ownerReferences: [
              {
                apiVersion: "argoproj.io/v1alpha1",
                kind: "ApplicationSet",
                name: "all",
                uid: "s1",
                controller: true,
              },
            ],
          },
        },
      ),
      "gitops-reverser",
    );
    assert.equal(view.heldByUs, true);
    assert.deepEqual(view.switchAppliedBy, ["helm"], "an Update entry applies nothing");
    assert.equal(view.applicationSet, "all");
    assert.match(
      viewApplication(app({ source, sources: [{}] }), "x").unsupportedSource ?? "",
      /several sources/,
    );
    assert.match(
      viewApplication(app({ source, sourceHydrator: {} }), "x").unsupportedSource ?? "",
      /hydrator/,
    );
  });

  it("the branch a source follows: a named branch, never HEAD, a tag or a commit", () => {
    assert.equal(branchOf("main"), "main");
    assert.equal(branchOf("refs/heads/release-1"), "release-1");
    assert.equal(branchOf("HEAD"), undefined);
    assert.equal(branchOf(""), undefined);
    assert.equal(branchOf("refs/tags/v1"), undefined);
    assert.equal(branchOf("0123456789abcdef0123456789abcdef01234567"), undefined);
  });
});

describe("a sync GitOps Reverser starts, as automated sync would build it", () => {
  const commit = "0123456789abcdef0123456789abcdef01234567";

  it("pinned to the commit, prune from automated.prune, the sync options, the retry with refresh dropped", () => {
    const operation = syncOperation(
      app({
        source,
        syncPolicy: {
          automated: { enabled: false, prune: true },
          syncOptions: ["ServerSideApply=true"],
          retry: { limit: 3, refresh: true, backoff: { duration: "5s" } },
        },
      }),
      commit,
      "t1",
    );
    assert.deepEqual(operation, {
      sync: { revision: commit, prune: true, syncOptions: ["ServerSideApply=true"] },
      initiatedBy: { username: "gitops-reverser", automated: true },
      info: [{ name: tokenInfo, value: "t1" }],
      retry: { limit: 3, backoff: { duration: "5s" } },
    });
  });

  it("without the automated block a sync does not prune, and the retry is Argo CD's default of five", () => {
    const operation = syncOperation(app({ source }), commit, "t1");
    assert.equal(operation.sync?.prune, false);
    assert.deepEqual(operation.retry, { limit: 5 });
  });

  it("the update that sets it clears the operation state, as SetAppOperation does", () => {
    const read = app(
      { source },
      { status: { operationState: { phase: "Succeeded" }, health: { status: "Healthy" } } },
    );
    const written = withSync(read, syncOperation(read, commit, "t1"));
    assert.equal(written.status?.operationState, undefined);
    assert.deepEqual(written.status?.health, { status: "Healthy" }, "nothing else of status");
    assert.equal(written.metadata?.resourceVersion, "7", "onto the version read");
  });

  it("is followed by its token: set, started, a retry still running, completed", () => {
    const ours = syncOperation(app({ source }), commit, "t1");
    assert.deepEqual(syncState(app({ source }), "t1"), { kind: "absent" });
    assert.deepEqual(syncState(app({ source }, { operation: ours }), "t1"), {
      kind: "running",
      started: false,
    });
    const running = { operation: ours, phase: "Running" };
    assert.deepEqual(
      syncState(app({ source }, { operation: ours, status: { operationState: running } }), "t1"),
      {
        kind: "running",
        started: true,
      },
    );
    // A failed sync with a retry to run is Running again (with a finishedAt): still running.
    const retrying = { ...running, finishedAt: "2026-12-03T10:00:00Z" };
    assert.equal(syncState(app({ source }, { status: { operationState: retrying } }), "t1").kind, "running");
    const done = { operation: ours, phase: "Succeeded", message: "ok", syncResult: { revision: commit } };
    assert.deepEqual(syncState(app({ source }, { status: { operationState: done } }), "t1"), {
      kind: "completed",
      phase: "Succeeded",
      message: "ok",
      revision: commit,
    });
    assert.deepEqual(syncState(app({ source }, { status: { operationState: done } }), "other"), {
      kind: "absent",
    });
  });
});

describe("the ArgoCDClaim's decision", () => {
  function claim(
    facts: { holding?: boolean; deleting?: boolean; status?: ArgoCDClaim["status"] } = {},
  ): ArgoCDClaim {
    return {
      apiVersion: "configbutler.ai/v1alpha3",
      kind: "ArgoCDClaim",
      metadata: {
        name: "shop",
        namespace: "shop",
        generation: 1,
        ...(facts.holding ? { finalizers: [argoCDClaimFinalizer] } : {}),
        ...(facts.deleting ? { deletionTimestamp: now } : {}),
      },
      spec: { kubeProviderRef: { name: "self" }, applicationRef: { name: "shop" } },
      ...(facts.status ? { status: facts.status } : {}),
    };
  }
  const view = (facts: Partial<ApplicationView> = {}): ApplicationView => ({
    ref: { namespace: "shop", name: "shop" },
    uid: "a1",
    resourceVersion: "7",
    automatedOn: true,
    prune: true,
    switchAppliedBy: [],
    heldByUs: false,
    source: { repoURL: source.repoURL, targetRevision: "main", path: "apps/shop" },
    operationSet: false,
    ...facts,
  });
  const world = (overrides: Partial<ArgoCDClaimWorld> = {}): ArgoCDClaimWorld => ({
    claim: claim(),
    now,
    verdict: bound,
    application: view(),
    version: { kind: "supported" },
    applierMissing: false,
    successor: false,
    ...overrides,
  });
  const inControl = (d: ReturnType<typeof decideArgoCDClaim>) =>
    d.conditions.find((c) => c.type === "InControl");
  const configured = (d: ReturnType<typeof decideArgoCDClaim>) =>
    d.conditions.find((c) => c.type === "Configured");

  it("adopts: the finalizer first, with how the switch stood", () => {
    const d = decideArgoCDClaim(world());
    assert.equal(d.step.kind, "addFinalizer");
    assert.equal(d.previousSuspendState, "Active");
  });

  it("switches automated sync off, then holds it; switched on again, off again with an Event", () => {
    const first = decideArgoCDClaim(world({ claim: claim({ holding: true }) }));
    assert.equal(first.step.kind, "switchOff");
    assert.equal(first.event?.reason, "Adopted");
    const held = decideArgoCDClaim(
      world({ claim: claim({ holding: true }), application: view({ heldByUs: true, automatedOn: false }) }),
    );
    assert.equal(held.step.kind, "none");
    assert.equal(inControl(held)?.reason, "Suspended");
    assert.equal(
      holdsApplication({ ...claim({ holding: true }), status: { conditions: held.conditions as never } }),
      true,
    );
    const again = decideArgoCDClaim(
      world({ claim: claim({ holding: true }), application: view({ heldByUs: true, automatedOn: true }) }),
    );
    assert.equal(again.step.kind, "switchOff");
    assert.equal(again.event?.reason, "ClaimedResourceReconciled");
  });

  it("refuses, never writes: an ApplicationSet's or another manager's switch on, several sources, an old Argo CD", () => {
    const cases: [Partial<ArgoCDClaimWorld>, string][] = [
      [{ application: view({ applicationSet: "all" }) }, "OwnedByApplicationSet"],
      [{ application: view({ switchAppliedBy: ["helm"] }) }, "AutomatedSyncOwnedElsewhere"],
      [{ application: view({ unsupportedSource: "it has several sources" }) }, "UnsupportedSource"],
      [{ version: { kind: "unsupported", message: "older than 3.1" } }, "ArgoCDVersionNotSupported"],
    ];
    for (const [facts, reason] of cases) {
      const d = decideArgoCDClaim(world(facts));
      assert.equal(configured(d)?.reason, reason);
      assert.equal(d.step.kind, "none", `${reason}: nothing written`);
    }
  });

  it("an ApplicationSet's Application with automated sync off is held by checking it, never written", () => {
    const d = decideArgoCDClaim(
      world({
        claim: claim({ holding: true }),
        application: view({ applicationSet: "all", automatedOn: false }),
      }),
    );
    assert.equal(d.step.kind, "none");
    assert.equal(inControl(d)?.reason, "Suspended");
    assert.match(inControl(d)?.message ?? "", /ApplicationSet all/);
  });

  it("hands back: gives the switch up, leaves it off if it was off before and giving up turned it on", () => {
    const released = (facts: Partial<ApplicationView>, previous: "Active" | "Suspended") =>
      decideArgoCDClaim(
        world({
          claim: claim({ holding: true, deleting: true, status: { previousSuspendState: previous } }),
          application: view(facts),
        }),
      ).step.kind;
    assert.equal(released({ heldByUs: true, automatedOn: false }, "Active"), "giveUp");
    assert.equal(released({ heldByUs: false, automatedOn: true }, "Active"), "removeFinalizer");
    assert.equal(released({ heldByUs: false, automatedOn: true }, "Suspended"), "leaveOff");
    assert.equal(released({ heldByUs: false, automatedOn: false }, "Suspended"), "removeFinalizer");
  });

  it("a sync nobody follows is ended after a minute; one followed keeps it Applying", () => {
    const operation = { phase: "Running" as const, requestToken: "t9", commit: "c1" };
    const holding = claim({ holding: true, status: { operation } });
    const heldView = view({ heldByUs: true, automatedOn: false });
    const followed = decideArgoCDClaim(world({ claim: holding, application: heldView, unfollowedMs: 0 }));
    assert.equal(inControl(followed)?.reason, "Applying");
    const abandoned = decideArgoCDClaim(
      world({ claim: holding, application: heldView, unfollowedMs: 61_000 }),
    );
    assert.equal(abandoned.operation?.phase, "Failed");
    assert.equal(abandoned.event?.reason, "OperationUnfollowed");
  });
});
