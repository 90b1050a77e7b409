import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { normalizeRepositoryUrl, redactUrl } from "../../../internal/types/repourl.ts";

describe("repository URL normalization", () => {
  it("scp-like, ssh and https URLs of one repository normalize to the same repository", () => {
    const key = "github.com/org/repo";
    assert.equal(normalizeRepositoryUrl("https://github.com/org/repo.git"), key);
    assert.equal(normalizeRepositoryUrl("git@github.com:org/repo.git"), key);
    assert.equal(normalizeRepositoryUrl("ssh://git@github.com/org/repo.git"), key);
    assert.equal(normalizeRepositoryUrl("ssh://git@github.com:22/org/repo"), key);
    assert.equal(normalizeRepositoryUrl("github.com:org/repo"), key);
  });

  it("lower-cases the scheme and host but keeps the path's case", () => {
    assert.equal(normalizeRepositoryUrl("HTTPS://GitHub.COM/Org/Repo"), "github.com/Org/Repo");
    assert.equal(normalizeRepositoryUrl("git@GitHub.com:Org/Repo.git"), "github.com/Org/Repo");
  });

  it("strips a trailing .git and trailing slashes, in either order", () => {
    for (const url of [
      "https://example.com/org/repo",
      "https://example.com/org/repo.git",
      "https://example.com/org/repo/",
      "https://example.com/org/repo.git/",
    ]) {
      assert.equal(normalizeRepositoryUrl(url), "example.com/org/repo", url);
    }
  });

  it("drops user info, so a password never becomes part of the key", () => {
    assert.equal(
      normalizeRepositoryUrl("https://bot:s3cret@example.com/org/repo.git"),
      "example.com/org/repo",
    );
    assert.equal(normalizeRepositoryUrl("https://token@example.com/org/repo"), "example.com/org/repo");
    assert.ok(!normalizeRepositoryUrl("https://bot:pa/ss@example.com/org/repo").includes("pa/ss"));
  });

  it("drops default ports and keeps any other", () => {
    assert.equal(normalizeRepositoryUrl("https://example.com:443/r"), "example.com/r");
    assert.equal(normalizeRepositoryUrl("http://example.com:80/r"), "example.com/r");
    assert.equal(normalizeRepositoryUrl("https://example.com:8443/r"), "example.com:8443/r");
    assert.equal(normalizeRepositoryUrl("http://127.0.0.1:39000/r.git"), "127.0.0.1:39000/r");
    assert.equal(normalizeRepositoryUrl("ssh://git@example.com:2222/r"), "example.com:2222/r");
  });

  it("keeps a repository served on another port apart: it may be another server", () => {
    assert.notEqual(
      normalizeRepositoryUrl("ssh://git@example.com:2222/r"),
      normalizeRepositoryUrl("https://example.com/r"),
    );
  });
});

describe("redactUrl", () => {
  it("takes user info out of a URL for a message", () => {
    assert.equal(
      redactUrl("https://bot:s3cret@example.com/org/repo.git"),
      "https://example.com/org/repo.git",
    );
    assert.equal(redactUrl("https://example.com/org/repo.git"), "https://example.com/org/repo.git");
    assert.equal(redactUrl("git@example.com:org/repo.git"), "git@example.com:org/repo.git");
  });

  it("never shows a password written with a raw slash in it", () => {
    assert.ok(!redactUrl("https://bot:pa/ss@example.com/org/repo").includes("pa/ss"));
  });
});
