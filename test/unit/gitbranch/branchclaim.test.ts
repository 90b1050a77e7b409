import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  BranchClaims,
  candidatesAfterFailure,
  holderOf,
  type BranchKey,
  type Candidate,
} from "../../../internal/gitbranch/branchclaim.ts";

const candidate = (uid: string, createdAt: string, namespace = "team-a"): Candidate => ({
  uid,
  namespace,
  name: `gb-${uid}`,
  createdAt,
});
const older = candidate("b", "2026-01-01T10:00:00Z");
const younger = candidate("a", "2026-01-01T10:00:05Z");
const main: BranchKey = { repository: "https://example.com/org/repo", branch: "main" };
const other: BranchKey = { repository: "https://example.com/org/repo", branch: "env/prod" };

describe("the branch claim's decision", () => {
  it("the oldest candidate holds the branch", () => {
    assert.equal(holderOf([younger, older])?.uid, "b");
    assert.equal(holderOf([older, younger])?.uid, "b");
    assert.equal(holderOf([]), undefined);
  });

  it("candidates created in the same second are ordered by UID", () => {
    const first = candidate("0001", "2026-01-01T10:00:00Z");
    const second = candidate("0002", "2026-01-01T10:00:00Z");
    assert.equal(holderOf([second, first])?.uid, "0001");
  });

  it("a holder stays a candidate through a failure", () => {
    assert.deepEqual(
      candidatesAfterFailure([older, younger], "b").map((c) => c.uid),
      ["b", "a"],
    );
  });

  it("any other candidate whose proof fails stops being one", () => {
    assert.deepEqual(
      candidatesAfterFailure([older, younger], "a").map((c) => c.uid),
      ["b"],
    );
  });
});

describe("BranchClaims", () => {
  it("a GitBranch that never proved a push session claims nothing, so it blocks nobody", () => {
    const claims = new BranchClaims();
    claims.failed(main, older.uid);
    claims.proved(main, younger);
    assert.equal(claims.holder(main)?.uid, "a");
  });

  it("an older candidate takes the branch from a younger one, and the candidates hear of it", () => {
    const claims = new BranchClaims();
    const heard: string[][] = [];
    claims.onHolderChanged((_key, candidates) => heard.push(candidates.map((c) => c.uid).sort()));
    claims.proved(main, younger);
    claims.proved(main, older);
    assert.equal(claims.holder(main)?.uid, "b");
    assert.deepEqual(heard, [["a"], ["a", "b"]]);
  });

  it("releasing the holder hands the branch to the next oldest candidate", () => {
    const claims = new BranchClaims();
    const heard: string[][] = [];
    claims.proved(main, older);
    claims.proved(main, younger);
    claims.onHolderChanged((_key, candidates) => heard.push(candidates.map((c) => c.uid)));
    claims.withdraw(older.uid);
    assert.equal(claims.holder(main)?.uid, "a");
    assert.deepEqual(heard, [["a"]]);
  });

  it("a holder keeps the branch through a failed proof; a younger candidate that fails drops out", () => {
    const claims = new BranchClaims();
    claims.proved(main, older);
    claims.proved(main, younger);
    claims.failed(main, older.uid);
    assert.equal(claims.holder(main)?.uid, "b");
    claims.failed(main, younger.uid);
    assert.deepEqual(
      claims.candidates(main).map((c) => c.uid),
      ["b"],
    );
  });

  it("each repository branch has its own holder", () => {
    const claims = new BranchClaims();
    claims.proved(main, younger);
    claims.proved(other, older);
    assert.equal(claims.holder(main)?.uid, "a");
    assert.equal(claims.holder(other)?.uid, "b");
  });

  it("a candidate whose provider now names another repository moves there", () => {
    const claims = new BranchClaims();
    claims.proved(main, older);
    claims.proved(main, younger);
    const moved: BranchKey = { repository: "https://example.com/org/other", branch: "main" };
    claims.proved(moved, older);
    assert.equal(claims.holder(main)?.uid, "a");
    assert.equal(claims.holder(moved)?.uid, "b");
  });

  it("a GitBranch that vanished unseen is withdrawn by name", () => {
    const claims = new BranchClaims();
    claims.proved(main, older);
    claims.withdrawByName("team-a", "gb-b");
    assert.equal(claims.holder(main), undefined);
  });
});
