import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  applierManagersOf,
  type Applier,
  type Attempt,
  type Outcome,
  type WriteVerdict,
} from "../../../../internal/applier/decide/index.ts";
import {
  WorkerApplies,
  windowGraceMs,
  type Applies,
  type AttemptReport,
  type BranchApplies,
} from "../../../../internal/git/worker/applies.ts";
import { configMapIdentity } from "../../../support/streams.ts";
import { quiet } from "../../../support/logger.ts";

const applier: Applier = {
  claim: { kind: "FluxClaim", namespace: "shop", name: "apps" },
  source: "self|shop/state",
  holds: true,
  targets: [{ uid: "t1", ref: { namespace: "shop", name: "apps" }, published: true }],
};
const at = (ms: number) => new Date(ms).toISOString();

/** A worker's applies on branch main with `appliers`, and of the process's only what a test gives. */
function branchApplies(
  appliers: Applier[],
  given: Pick<Applies, "dispatch"> & Partial<Applies>,
): BranchApplies {
  return {
    branch: { key: "shop/main", url: "https://git.example/shop.git", branch: "main" },
    appliers: () => appliers,
    applies: {
      holds: () => true,
      snapshotsSettled: () => true,
      sourceOf: () => undefined,
      lastApplied: () => undefined,
      managersOf: (claim) => applierManagersOf(claim.kind),
      ...given,
    },
  };
}
const fluxEntry = (ms: number) => ({ manager: "kustomize-controller", time: at(ms) });
const personEntry = (ms: number) => ({ manager: "kubectl-edit", time: at(ms) });
/** Writes whose writer the watch could not tell (no previous event at hand): the tie rule judges them. */
const flux = (ms: number) => ({ writers: [fluxEntry(ms)] });
const person = (ms: number) => ({ writers: [personEntry(ms)] });
const settings = configMapIdentity("settings", "shop");

/** A worker's applies with one applier, whose attempts wait until the test ends them. */
function applies(recover?: Applies["recover"], held: Applier = applier) {
  const sent: Attempt[] = [];
  const reports: AttemptReport[] = [];
  const judged: WriteVerdict[] = [];
  const repairs: boolean[] = [];
  const ends: ((outcome: Outcome) => void)[] = [];
  const worker = new WorkerApplies(
    branchApplies([held], {
      dispatch: (_branch, attempt) => {
        sent.push(attempt);
        return new Promise((resolve) => ends.push(resolve));
      },
      judged: (_claim, verdict) => void judged.push(verdict),
      repairPending: (_claim, pending) => void repairs.push(pending),
      ...(recover ? { recover } : {}),
    }),
    quiet,
    (r) => reports.push(r),
  );
  /** Observes `tip` and sends the attempt it makes due at `now`, after a flush at `flushAt`. */
  const sendAt = (now: number, tip = "c1", flushAt = now) => {
    worker.fetched(tip);
    assert.deepEqual(worker.next(flushAt, { tip, trusted: true, pending: 0, held: false }), {
      kind: "flush",
    });
    assert.deepEqual(worker.next(flushAt, { tip, trusted: true, pending: 0, held: false }), {
      kind: "send",
      tip,
    });
    worker.send(tip, now, () => true);
  };
  return { worker, sent, judged, repairs, ends, sendAt, reports };
}

describe("the apply window judges the applier's writes to its folder", () => {
  it("an Argo CD sync's echo is judged by Argo CD's own managers, not Flux's", () => {
    const argo: Applier = { ...applier, claim: { kind: "ArgoCDClaim", namespace: "shop", name: "apps" } };
    const { worker, judged, sendAt } = applies(undefined, argo);
    sendAt(10_000);
    const argocd = (ms: number) => ({ writers: [{ manager: "argocd-controller", time: at(ms) }] });
    assert.equal(worker.admits("shop/apps", settings, argocd(11_000), 11_000), false, "its echo");
    assert.equal(worker.admits("shop/apps", settings, flux(11_000), 11_000), true, "Flux is not its applier");
    assert.deepEqual(judged, ["echo"]);
  });

  it("the apply's own write, with nobody's edit in the window, is its echo: not mirrored", () => {
    const { worker, judged, sendAt } = applies();
    sendAt(10_000);
    assert.equal(worker.admits("shop/apps", settings, flux(11_000), 11_000), false);
    assert.deepEqual(judged, ["echo"]);
  });

  it("a late apply over a newer API edit is withheld, Git keeps the edit, and a Repair is due", () => {
    const { worker, judged, repairs, sendAt, ends, sent } = applies();
    sendAt(10_000);
    assert.equal(worker.admits("shop/apps", settings, person(12_000), 12_000), true, "the edit is mirrored");
    assert.equal(worker.admits("shop/apps", settings, flux(13_000), 13_000), false, "the late apply is not");
    assert.deepEqual(judged, ["withheld"]);
    ends[0]!({ kind: "succeeded", commit: "c1" });
    worker.reported({ attempt: sent[0]!, outcome: { kind: "succeeded", commit: "c1" } }, 14_000);
    // The Repair asks for the tip again although it was just applied.
    sendAt(15_000, "c1", 14_000);
    assert.equal(sent.at(-1)?.targets[0]?.reason, "Repair");
    // The flush published the edit, so the Repair's own write of it is its echo, not withheld again.
    assert.equal(worker.admits("shop/apps", settings, flux(16_000), 16_000), false);
    assert.deepEqual(judged, ["withheld", "echo"]);
    assert.deepEqual(repairs, [true], "the claim says repairPending while the Repair is due or out");
    worker.reported({ attempt: sent.at(-1)!, outcome: { kind: "succeeded", commit: "c1" } }, 17_000);
    assert.deepEqual(repairs, [true, false], "answered once the Repair succeeded");
  });

  it("an echo judged after its attempt reported (its author awaited) is that apply's own write, not withheld over a carried edit", () => {
    const { worker, judged, repairs, sendAt, sent } = applies();
    sendAt(10_000);
    assert.equal(worker.admits("shop/apps", settings, person(12_000), 12_000), true, "the edit is mirrored");
    worker.reported({ attempt: sent[0]!, outcome: { kind: "succeeded", commit: "c1" } }, 13_000);
    // Somebody pushes c2 on top of the published edit: the flush carries the edit into the next attempt.
    sendAt(15_000, "c2", 14_000);
    // Its write lands at 15.5 s, but attribution holds the event until after the attempt reported.
    worker.reported({ attempt: sent[1]!, outcome: { kind: "succeeded", commit: "c2" } }, 16_000);
    assert.equal(worker.admits("shop/apps", settings, flux(15_500), 17_000), false, "its echo");
    assert.deepEqual(judged, ["echo"]);
    assert.deepEqual(repairs, [], "no Repair");
  });

  it("a GitTarget's first snapshot of a collection is no stale snapshot: only a discard or a use past the hold is reported", () => {
    const reported: string[] = [];
    const worker = new WorkerApplies(
      branchApplies([applier], {
        dispatch: () => new Promise(() => undefined),
        staleSnapshot: (_target, outcome) => void reported.push(outcome),
      }),
      quiet,
      () => undefined,
    );
    worker.fetched("c1");
    assert.equal(worker.snapshot("shop/apps", "cm", undefined, 1_000), "initial");
    assert.deepEqual(reported, [], "the startup baseline");
    assert.equal(worker.snapshot("shop/apps", "cm", { epoch: 0, ahead: true }, 2_000), "discard");
    assert.deepEqual(reported, ["discarded"]);
  });

  it("a refused edit guards nothing: the apply that reverts it is meant", () => {
    const { worker, judged, sendAt } = applies();
    sendAt(10_000);
    assert.equal(worker.admits("shop/apps", settings, person(12_000), 12_000), true);
    worker.refused("shop/apps", settings, "plaintext_sensitive");
    assert.equal(worker.admits("shop/apps", settings, flux(13_000), 13_000), false);
    assert.deepEqual(judged, ["echo"]);
  });

  it("the applier and a person in the same second could be the edit itself: mirrored, as ambiguous", () => {
    const { worker, judged, sendAt } = applies();
    sendAt(10_000);
    const tie = { writers: [fluxEntry(12_000), personEntry(12_000)] };
    assert.equal(worker.admits("shop/apps", settings, tie, 12_000), true);
    assert.deepEqual(judged, ["ambiguous"]);
  });

  it("the writer of each write is known, not guessed: the applier's write in the edit's second is withheld", () => {
    const { worker, judged, repairs, sendAt } = applies();
    sendAt(10_000);
    // A person's edit at 12.1 s, then kustomize-controller's write at 12.6 s: the watch saw its
    // entry move since the edit, so the tie in managedFields is no tie.
    const edit = { writers: [personEntry(12_100)], writer: "kubectl-edit" };
    const apply = { writers: [personEntry(12_100), fluxEntry(12_600)], writer: "kustomize-controller" };
    assert.equal(worker.admits("shop/apps", settings, edit, 12_100), true, "the edit is mirrored");
    assert.equal(worker.admits("shop/apps", settings, apply, 12_600), false, "the apply over it is withheld");
    assert.deepEqual(judged, ["withheld"]);
    assert.deepEqual(repairs, [true], "a Repair is due");
  });

  it("a live edit in the same second as the applier's write, known as the person's, is mirrored as an edit", () => {
    const { worker, judged, sendAt } = applies();
    sendAt(10_000);
    const apply = { writers: [fluxEntry(12_100)], writer: "kustomize-controller" };
    const edit = { writers: [fluxEntry(12_100), personEntry(12_600)], writer: "kubectl-edit" };
    assert.equal(worker.admits("shop/apps", settings, apply, 12_100), false, "the echo");
    assert.equal(worker.admits("shop/apps", settings, edit, 12_600), true, "the edit");
    assert.deepEqual(judged, ["echo"], "no collision: the edit is an edit");
  });

  it("the window stays open 10 s after the attempt ends; past that, the applier's write is late and mirrored", () => {
    const { worker, judged, sendAt, sent } = applies();
    sendAt(10_000);
    worker.reported({ attempt: sent[0]!, outcome: { kind: "succeeded", commit: "c1" } }, 20_000);
    assert.equal(
      worker.admits("shop/apps", settings, flux(25_000), 25_000),
      false,
      "inside the grace: an echo",
    );
    const after = 20_000 + windowGraceMs + 1;
    assert.equal(worker.admits("shop/apps", settings, flux(after), after), true, "after it: late");
    assert.deepEqual(judged, ["echo", "late"]);
  });

  it("a folder no claim applies, and a person's write, are mirrored without judgement", () => {
    const { worker, judged, sendAt } = applies();
    sendAt(10_000);
    assert.equal(worker.admits("shop/other", settings, flux(11_000), 11_000), true);
    assert.equal(worker.admits("shop/apps", configMapIdentity("x", "shop"), person(11_000), 11_000), true);
    assert.deepEqual(judged, []);
  });
});

describe("restart recovery: an operation the last process left in flight", () => {
  /** A recovery of the claim's operation requested at 9 s, which ends when the test says. */
  function recovering() {
    let end!: (outcome: Outcome) => void;
    const asked: string[] = [];
    const recover: Applies["recover"] = (claim) => {
      asked.push(claim.name);
      return {
        token: "recovered-token",
        commit: "c0",
        sentAt: 9_000,
        outcome: new Promise<Outcome>((resolve) => (end = resolve)),
      };
    };
    return { recover, asked, end: (outcome: Outcome) => end(outcome) };
  }

  it("is read back once, when the worker first lists the claim, with its window open from its request", () => {
    const recovery = recovering();
    const { worker, judged } = applies(recovery.recover);
    // The first live write judged lists the claim: the kustomize-controller write after the
    // recovered request is that operation's echo.
    assert.equal(worker.admits("shop/apps", settings, flux(10_000), 10_000), false);
    assert.deepEqual(judged, ["echo"]);
    worker.fetched("c1");
    assert.deepEqual(recovery.asked, ["apps"], "read back once");
  });

  it("asks the applier for nothing until it ends; the converge at start follows, and its end reaches the loop", async () => {
    const recovery = recovering();
    const { worker, sent, reports } = applies(recovery.recover);
    worker.fetched("c1");
    assert.equal(worker.next(10_000, { tip: "c1", trusted: true, pending: 0, held: false }), undefined);
    recovery.end({ kind: "failed" });
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(reports.length, 1, "the recovered operation's end comes back through the loop");
    worker.reported(reports[0]!, 11_000);
    // Its failure starts no backoff: the converge at start is sent at once.
    assert.deepEqual(worker.next(11_000, { tip: "c1", trusted: true, pending: 0, held: false }), {
      kind: "flush",
    });
    assert.deepEqual(worker.next(11_000, { tip: "c1", trusted: true, pending: 0, held: false }), {
      kind: "send",
      tip: "c1",
    });
    worker.send("c1", 11_000, () => true);
    assert.equal(sent.length, 1);
    assert.equal(sent[0]!.targets[0]?.reason, "CatchUp");
  });

  it("one that applied the tip answers the converge at start: nothing more is asked", async () => {
    const recovery = recovering();
    const { worker, reports } = applies((claim) => {
      const r = recovery.recover(claim);
      return r && { ...r, commit: "c1" };
    });
    worker.fetched("c1");
    recovery.end({ kind: "succeeded", commit: "c1" });
    await new Promise((resolve) => setImmediate(resolve));
    worker.reported(reports[0]!, 11_000);
    assert.equal(worker.next(11_000, { tip: "c1", trusted: true, pending: 0, held: false }), undefined);
  });
});
