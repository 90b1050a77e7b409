import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  fetchedRoot,
  pushedRoot,
  rootCommit,
  rootHolds,
  type Advertisement,
  type Root,
} from "../../../../internal/git/engine/root.ts";

const advertised = (refs: Record<string, string>): Advertisement => ({
  refs: new Map(Object.entries(refs).map(([ref, commit]) => [ref, commit])),
  head: "refs/heads/main",
});

describe("a branch pushed to a review ref: what its root is, and what it is compared against", () => {
  it("a review push leaves the branch's root as the fetch found it, and the next commits go on the pushed one", () => {
    const fetched: Root = { from: "branch", commit: "m1" };
    const after = pushedRoot(fetched, "r1", true);
    assert.deepEqual(after, { from: "review", commit: "r1", base: fetched });
    assert.equal(rootCommit(after), "r1", "commits sit on the review push");
    assert.deepEqual(fetchedRoot(after), fetched, "the branch is where the fetch found it");
    // A second review push keeps the same base: the branch was never written.
    assert.deepEqual(pushedRoot(after, "r2", true), { from: "review", commit: "r2", base: fetched });
  });

  it("a push to the branch makes the pushed commit the branch's root, as before", () => {
    assert.deepEqual(pushedRoot({ from: "parent", parent: "main", commit: "m1" }, "c1", false), {
      from: "branch",
      commit: "c1",
    });
  });

  it("holds while the fetched branch is where it was, whatever the review ref shows; a moved branch does not hold", () => {
    const root = pushedRoot({ from: "branch", commit: "m1" }, "r1", true);
    assert.equal(rootHolds(advertised({ "refs/heads/main": "m1" }), "main", root), true);
    assert.equal(
      rootHolds(advertised({ "refs/heads/main": "m1", "refs/for/main": "other" }), "main", root),
      true,
      "a review ref is not the branch",
    );
    assert.equal(rootHolds(advertised({ "refs/heads/main": "m2" }), "main", root), false);
    assert.equal(rootHolds(advertised({}), "main", root), false, "nor a deleted one");
  });

  it("on a missing branch, holds while the parent it was made on is where it was and the branch is still absent", () => {
    const root = pushedRoot({ from: "parent", parent: "release", commit: "p1" }, "r1", true);
    assert.equal(rootHolds(advertised({ "refs/heads/release": "p1" }), "app", root), true);
    assert.equal(rootHolds(advertised({ "refs/heads/release": "p2" }), "app", root), false);
    assert.equal(
      rootHolds(advertised({ "refs/heads/release": "p1", "refs/heads/app": "p1" }), "app", root),
      false,
      "the branch created meanwhile",
    );
  });
});
