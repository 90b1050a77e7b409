import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { branchGrantVerdict, branchMatches } from "../../../internal/grants/branches.ts";

describe("branch patterns", () => {
  it("a name matches only itself", () => {
    assert.equal(branchMatches("main", "main"), true);
    assert.equal(branchMatches("main", "main2"), false);
    assert.equal(branchMatches("release.1", "releasex1"), false);
  });

  it("* matches within one path segment", () => {
    assert.equal(branchMatches("env/*", "env/prod"), true);
    assert.equal(branchMatches("env/*", "env/prod/eu"), false);
    assert.equal(branchMatches("env/*", "env"), false);
    assert.equal(branchMatches("team-*", "team-a"), true);
    assert.equal(branchMatches("*", "feature/x"), false);
  });

  it("** matches across path segments", () => {
    assert.equal(branchMatches("env/**", "env/prod/eu"), true);
    assert.equal(branchMatches("env/**", "env/prod"), true);
    assert.equal(branchMatches("**", "any/depth/at/all"), true);
    assert.equal(branchMatches("**/prod", "env/eu/prod"), true);
    assert.equal(branchMatches("a/**/b", "a/x/y/b"), true);
    assert.equal(branchMatches("env/**", "environment"), false);
  });

  it("a ** segment also matches no segment at all", () => {
    assert.equal(branchMatches("env/**", "env"), true);
    assert.equal(branchMatches("**/prod", "prod"), true);
    assert.equal(branchMatches("a/**/b", "a/b"), true);
  });
});

describe("GitProvider branch grants", () => {
  const grants = [
    { consumerNamespaces: { from: "Same" as const }, branches: ["main"] },
    { consumerNamespaces: { from: "Names" as const, names: ["team-b"] }, branches: ["env/*"] },
  ];

  it("omitted allowedGitBranches admits nobody, not even the provider's own namespace", () => {
    assert.deepEqual(branchGrantVerdict(undefined, "team-a", "team-a", {}, "main"), { verdict: "namespace" });
    assert.deepEqual(branchGrantVerdict([], "team-a", "team-a", {}, "main"), { verdict: "namespace" });
  });

  it("a namespace no grant selects is not authorized", () => {
    assert.deepEqual(branchGrantVerdict(grants, "team-a", "team-c", {}, "main"), { verdict: "namespace" });
  });

  it("only the patterns of the grants admitting the namespace count", () => {
    assert.deepEqual(branchGrantVerdict(grants, "team-a", "team-a", {}, "main"), { verdict: "allowed" });
    assert.deepEqual(branchGrantVerdict(grants, "team-a", "team-b", {}, "main"), {
      verdict: "branch",
      patterns: ["env/*"],
    });
    assert.deepEqual(branchGrantVerdict(grants, "team-a", "team-b", {}, "env/prod"), { verdict: "allowed" });
  });
});
