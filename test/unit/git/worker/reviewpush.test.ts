// A branch pushed to a review ref (GitBranch spec.push.refspec): the publication's rules, and the
// worker asking no applier, against the in-memory remote. The real push, and the host's hook
// seeing it, are pinned in test/e2e/git/reviewpush.test.ts.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Publication } from "../../../../internal/git/worker/publication.ts";
import { BranchWorker } from "../../../../internal/git/worker/branchworker.ts";
import { RemoteMovedError } from "../../../../internal/git/engine/clone.ts";
import type { Root } from "../../../../internal/git/engine/root.ts";
import { TargetFolders } from "../../../../internal/git/folder/targetfolders.ts";
import type { Change, DecidedWrite, TargetSettings } from "../../../../internal/git/folder/writes.ts";
import type { Attempt } from "../../../../internal/applier/decide/index.ts";
import { applierManagersOf } from "../../../../internal/applier/decide/index.ts";
import type { BranchState } from "../../../../internal/git/worker/report.ts";
import { FakeClone, FakeRemote } from "./fakeremote.ts";
import { configMaps } from "../fixtures.ts";
import { configMapIdentity } from "../../../support/streams.ts";
import { unheardFolders } from "../../../support/worker.ts";
import { eventually } from "../../../support/wait.ts";
import { quiet } from "../../../support/logger.ts";

/** Pushes to refs/for/main as Gerrit takes it: every push lands, and the branch never moves. */
class ReviewClone extends FakeClone {
  readonly reviewRef = "refs/for/main";
  /** Each review push: its commit and the files it carries. */
  readonly reviews: { commit: string; files: Map<string, string> }[] = [];

  override async push(root: Root): Promise<string> {
    if (this.unreachable) throw new Error("connect ECONNREFUSED");
    if (!(await this.holds(root))) throw new RemoteMovedError("moved");
    this.pushes++;
    const commit = this.headCommit!;
    this.reviews.push({ commit, files: new Map(this.remote.commits.get(commit)) });
    return commit;
  }
}

const target = {
  key: "apps/t",
  path: "f",
  timers: { idleTimeoutMs: 0, maxDurationMs: 0 },
  prune: "OnEvent" as const,
};
const configMap = (name: string, value: string) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, namespace: "apps" },
  data: { value },
});
const document = (name: string, value: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: apps\ndata:\n  value: ${value}\n`;
const upsert = (name: string, value: string): Change => ({
  op: "upsert",
  identity: configMapIdentity(name),
  object: configMap(name, value),
});
const live = (...changes: Change[]): DecidedWrite => ({ target, reason: "live", changes });
const file = (name: string) => `f/apps/configmaps/${name}.yaml`;
const materialize = {
  committer: { name: "a", email: "b" },
  additionalSensitive: [],
  message: () => "m",
  onRefused: () => undefined,
};

function setup() {
  const remote = new FakeRemote();
  const main = remote.pushForeign((files) => files.set("f/README.md", "# folder\n"));
  const clone = new ReviewClone(remote);
  const folders = new TargetFolders(
    { holdMs: 60_000, budgetBytes: 1 << 20 },
    {
      onReport: () => undefined,
      onDropped: () => undefined,
      onPlaced: () => undefined,
      onResyncRequested: () => undefined,
    },
  );
  const publication = new Publication({
    repository: clone,
    folders,
    logger: quiet,
    random: () => 0,
    materialize,
  });
  const cycle = (...writes: DecidedWrite[]) => publication.cycle(writes, () => undefined);
  return { remote, main, clone, publication, cycle };
}

describe("a publication pushed to a review ref", () => {
  it("leaves the branch where it was, and the next write goes on top of its last review push with no fetch", async () => {
    const { remote, main, clone, publication, cycle } = setup();
    assert.equal((await cycle(live(upsert("a", "one")))).kind, "pushed");
    assert.equal(remote.tip, main, "the branch is not written");
    assert.equal(publication.tip, main, "the worker knows the branch where it is");
    assert.equal(publication.branchTip, main);
    assert.equal((await cycle(live(upsert("b", "one")))).kind, "pushed");
    assert.equal(clone.fetches, 1, "a trusted base: no fetch before the second review push");
    const [first, second] = clone.reviews;
    assert.equal(first?.files.get(file("a")), document("a", "one"));
    assert.equal(second?.files.get(file("a")), document("a", "one"), "the line goes on from the last push");
    assert.equal(second?.files.get(file("b")), document("b", "one"));
    assert.equal(remote.tip, main);
  });

  it("checks the fetched branch before it pushes: a moved branch costs a fetch, the retained write is replayed on its tip, and what went for review before is not", async () => {
    const { remote, clone, cycle } = setup();
    await cycle(live(upsert("a", "one")));
    const theirs = remote.pushForeign((files) => files.set("f/hand.yaml", document("hand", "by-hand")));
    assert.equal((await cycle(live(upsert("b", "one")))).kind, "pushed");
    assert.equal(clone.fetches, 2);
    assert.equal(remote.tip, theirs, "their commit is the branch, untouched");
    const last = clone.reviews.at(-1)!;
    assert.equal(last.files.get("f/hand.yaml"), document("hand", "by-hand"), "made on their commit");
    assert.equal(last.files.get(file("b")), document("b", "one"));
    assert.equal(last.files.has(file("a")), false, "a write already pushed for review is not replayed");
  });

  it("a refresh proves the fetched branch: unmoved, the review line is kept; moved, the checkout is rebuilt from it", async () => {
    const { remote, main, clone, publication, cycle } = setup();
    await cycle(live(upsert("a", "one")));
    assert.equal(await publication.refresh(), "Advertisement");
    assert.equal(publication.tip, main);
    await cycle(live(upsert("b", "one")));
    assert.equal(clone.reviews.at(-1)?.files.get(file("a")), document("a", "one"), "the line was kept");
    const theirs = remote.pushForeign((files) => files.set("f/hand.yaml", "x\n"));
    assert.equal(await publication.refresh(), "Fetch");
    assert.equal(publication.tip, theirs);
    assert.equal(clone.headCommit, theirs, "rebuilt from the branch");
    assert.equal(await clone.read(file("a")), undefined);
  });
});

describe("a branch worker pushed to a review ref", () => {
  const claimed: TargetSettings = {
    ...target,
    claim: { kind: "FluxClaim", namespace: "apps", name: "flux", targetUid: "t1" },
  };

  /** A worker on `clone` whose one target names a FluxClaim; what it asks of the applier. */
  function worker(clone: FakeClone) {
    const dispatched: Attempt[] = [];
    const states: BranchState[] = [];
    const committer = { name: "a", email: "b" };
    const subject = new BranchWorker({
      clone,
      committer,
      bufferLimitBytes: 1 << 20,
      pushCooldownMs: 0,
      refreshIntervalMs: 3_600_000,
      logger: quiet,
      materialize,
      folders: unheardFolders,
      onState: (state) => states.push(state),
      applies: {
        branch: { key: "apps/main", url: "https://git.example/apps.git", branch: "main" },
        appliers: () => [
          {
            claim: { kind: "FluxClaim", namespace: "apps", name: "flux" },
            source: "apps/state",
            holds: true,
            targets: [{ uid: "t1", ref: { namespace: "apps", name: "t" }, published: true }],
          },
        ],
        applies: {
          holds: () => true,
          snapshotsSettled: () => true,
          sourceOf: () => undefined,
          lastApplied: () => undefined,
          managersOf: (claim) => applierManagersOf(claim.kind),
          dispatch: (_branch, attempt) => {
            dispatched.push(attempt);
            return Promise.resolve({ kind: "succeeded", commit: attempt.commit });
          },
        },
      },
    });
    subject.start();
    subject.enqueue(claimed, {
      type: "upsert",
      collection: configMaps,
      identity: configMapIdentity("a"),
      object: configMap("a", "one"),
    });
    return { subject, dispatched, states };
  }

  it("asks the applier once its write is on the branch, when it pushes the branch", async () => {
    const remote = new FakeRemote();
    remote.pushForeign((files) => files.set("f/README.md", "x\n"));
    const { subject, dispatched } = worker(new FakeClone(remote));
    try {
      await eventually(() => dispatched.length > 0, { timeoutMs: 5_000, description: "an apply asked" });
    } finally {
      await subject.stop();
    }
  });

  it("asks no applier, says what it pushed where, and reads no snapshot as Git ahead", async () => {
    const remote = new FakeRemote();
    const main = remote.pushForeign((files) => files.set("f/README.md", "x\n"));
    const clone = new ReviewClone(remote);
    const { subject, dispatched, states } = worker(clone);
    try {
      await eventually(() => clone.reviews.length > 0, { timeoutMs: 5_000, description: "a review push" });
      const pushed = await eventually(() => states.at(-1)?.reviewPush, {
        description: "the review push reported",
      });
      assert.equal(pushed.ref, "refs/for/main");
      assert.equal(pushed.commit, clone.reviews[0]?.commit);
      // Pushing the branch, the same worker asks within about 100 ms: give it three times that.
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.deepEqual(dispatched, [], "nothing is merged, so nothing is applied");
      assert.equal(subject.collecting(), undefined, "no snapshot is judged against an applier");
      assert.equal(remote.tip, main);
    } finally {
      await subject.stop();
    }
  });
});
