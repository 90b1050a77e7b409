import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { coverOf, covers, uncoveredReferences } from "../../../../internal/git/engine/sparse.ts";

describe("the folders a clone checks out", () => {
  it("covers the target folders with the fewest directories", () => {
    assert.deepEqual(coverOf(["clusters/prod/apps", "clusters/prod", "./infra/", "clusters/dev"]), [
      "clusters/dev",
      "clusters/prod",
      "infra",
    ]);
  });

  it("is the whole repository when a target writes its root", () => {
    assert.equal(coverOf(["apps", "."]), "all");
    assert.equal(coverOf([""]), "all");
    assert.equal(covers("all", "anything"), true);
  });

  it("holds a folder inside a covered one, and not a sibling sharing its prefix", () => {
    const cover = coverOf(["clusters/prod"]);
    assert.equal(covers(cover, "clusters/prod/apps"), true);
    assert.equal(covers(cover, "clusters/production"), false);
  });

  it("follows an overlay's base outside the cover, and nothing remote or outside the repository", () => {
    const cover = coverOf(["overlays/prod"]);
    assert.deepEqual(
      uncoveredReferences(
        "overlays/prod/kustomization.yaml",
        [
          "../../base",
          "deployment.yaml",
          "./nested",
          "https://github.com/example/repo//deploy?ref=v1",
          "github.com/example/repo/deploy?ref=main",
          "../../../outside",
        ],
        cover,
      ),
      ["base"],
    );
  });
});
