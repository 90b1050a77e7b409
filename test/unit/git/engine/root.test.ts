import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  ParentMissingError,
  rootFrom,
  rootHolds,
  type Advertisement,
} from "../../../../internal/git/engine/root.ts";

const advertised = (refs: Record<string, string>, head = "refs/heads/main"): Advertisement => ({
  refs: new Map(Object.entries(refs).map(([branch, commit]) => [`refs/heads/${branch}`, commit])),
  head,
});

describe("where a write branch starts, and whether the remote still shows it", () => {
  it("starts on the branch's own tip when the remote carries it", () => {
    assert.deepEqual(rootFrom(advertised({ main: "a", app: "b" }), "app"), { from: "branch", commit: "b" });
  });

  it("creates a missing branch from spec.parentBranch", () => {
    assert.deepEqual(rootFrom(advertised({ main: "a", release: "r" }), "app", "release"), {
      from: "parent",
      parent: "release",
      commit: "r",
    });
  });

  it("creates a missing branch from the remote's default branch when no parent is named", () => {
    assert.deepEqual(rootFrom(advertised({ main: "a" }), "app"), {
      from: "parent",
      parent: "main",
      commit: "a",
    });
  });

  it("opens parent recovery for a missing parent, or a default branch that does not resolve", () => {
    assert.throws(() => rootFrom(advertised({ main: "a" }), "app", "release"), ParentMissingError);
    assert.throws(() => rootFrom(advertised({ other: "o" }), "app"), ParentMissingError);
  });

  it("starts empty only in an empty repository", () => {
    assert.deepEqual(rootFrom(advertised({}), "main"), { from: "empty" });
  });

  it("holds while the branch is where the commits start, and not once anybody moved it", () => {
    const root = { from: "branch" as const, commit: "a" };
    assert.equal(rootHolds(advertised({ main: "a" }), "main", root), true);
    assert.equal(rootHolds(advertised({ main: "f" }), "main", root), false, "a foreign commit");
    assert.equal(rootHolds(advertised({}), "main", root), false, "a deleted branch is a moved remote");
  });

  it("treats a moved parent, and a branch somebody else created meanwhile, as a moved remote", () => {
    const root = { from: "parent" as const, parent: "release", commit: "r" };
    assert.equal(rootHolds(advertised({ release: "r" }), "app", root), true);
    assert.equal(rootHolds(advertised({ release: "r2" }), "app", root), false);
    assert.equal(rootHolds(advertised({ release: "r", app: "x" }), "app", root), false);
  });

  it("refuses a cycle planned on an empty repository once it has gained refs: never an orphan push", () => {
    assert.equal(rootHolds(advertised({}), "main", { from: "empty" }), true);
    assert.equal(rootHolds(advertised({ main: "x" }), "main", { from: "empty" }), false);
  });
});
