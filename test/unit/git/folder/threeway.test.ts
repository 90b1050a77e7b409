import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { overrideNote, pushedDocuments, threeWay } from "../../../../internal/git/folder/threeway.ts";
import { configMapIdentity } from "../../../support/streams.ts";

describe("the restart three-way rule: the ground rule wins", () => {
  const changed = pushedDocuments(
    new Map([
      ["/ConfigMap/shop/settings", "d-before"],
      ["/ConfigMap/shop/gone", "d-gone"],
      ["/ConfigMap/shop/same", "d-same"],
    ]),
    new Map([
      ["/ConfigMap/shop/settings", "d-pushed"],
      ["/ConfigMap/shop/added", "d-added"],
      ["/ConfigMap/shop/same", "d-same"],
    ]),
    ["c2"],
  );

  it("a document a push left alone is no pushed change", () => {
    assert.equal(changed.has("/ConfigMap/shop/same"), false);
  });

  it("a live object nobody edited keeps the pushed document, which the converge applies", () => {
    assert.equal(threeWay(changed.get("/ConfigMap/shop/settings"), "d-before"), "keep_tip");
    assert.equal(threeWay(changed.get("/ConfigMap/shop/gone"), "d-gone"), "keep_tip", "a pushed delete");
  });

  it("an API edit and a Git commit of the same object: the API wins", () => {
    assert.equal(threeWay(changed.get("/ConfigMap/shop/settings"), "d-live"), "api_wins");
    assert.equal(
      threeWay(changed.get("/ConfigMap/shop/added"), "d-live"),
      "api_wins",
      "created on both sides",
    );
  });

  it("a live object that already is what the push holds changes nothing", () => {
    assert.equal(threeWay(changed.get("/ConfigMap/shop/settings"), "d-pushed"), "as_ever");
    assert.equal(threeWay(undefined, "d-live"), "as_ever");
  });

  it("names the pushed commits", () => {
    assert.deepEqual(changed.get("/ConfigMap/shop/added"), { tip: "d-added", commits: ["c2"] });
  });

  it("the Warning names the objects, the pushed commit, and the revert that brings it back", () => {
    const note = overrideNote(
      [
        {
          identity: configMapIdentity("settings", "shop"),
          commits: ["4f1c2a9e0b7d5566778899aabbccddeeff001122"],
        },
      ],
      "9a0e51c3d2f4aabbccddeeff0011223344556677",
    );
    assert.match(note, /^ConfigMap shop\/settings changed on the cluster and in Git \(4f1c2a9e0b7d\)/);
    assert.match(note, /git revert 9a0e51c3d2f4 and push\.$/);
  });
});
