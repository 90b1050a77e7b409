import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { normalizeRepositoryUrl, redactUrl } from "../../../internal/git/repourl.ts";

describe("repository URL normalization", () => {
  it("scp-like and ssh URLs normalize to the same repository", () => {
    const key = "ssh://github.com/org/repo";
    assert.equal(normalizeRepositoryUrl("git@github.com:org/repo.git"), key);
    assert.equal(normalizeRepositoryUrl("ssh://git@github.com/org/repo.git"), key);
    assert.equal(normalizeRepositoryUrl("ssh://git@github.com:22/org/repo"), key);
    assert.equal(normalizeRepositoryUrl("github.com:org/repo"), key);
  });

  it("lower-cases the scheme and host but keeps the path's case", () => {
    assert.equal(normalizeRepositoryUrl("HTTPS://GitHub.COM/Org/Repo"), "https://github.com/Org/Repo");
    assert.equal(normalizeRepositoryUrl("git@GitHub.com:Org/Repo.git"), "ssh://github.com/Org/Repo");
  });

  it("strips a trailing .git and trailing slashes, in either order", () => {
    for (const url of [
      "https://example.com/org/repo",
      "https://example.com/org/repo.git",
      "https://example.com/org/repo/",
      "https://example.com/org/repo.git/",
    ]) {
      assert.equal(normalizeRepositoryUrl(url), "https://example.com/org/repo", url);
    }
  });

  it("drops user info, so a password never becomes part of the key", () => {
    assert.equal(
      normalizeRepositoryUrl("https://bot:s3cret@example.com/org/repo.git"),
      "https://example.com/org/repo",
    );
    assert.equal(
      normalizeRepositoryUrl("https://token@example.com/org/repo"),
      "https://example.com/org/repo",
    );
    assert.ok(!normalizeRepositoryUrl("https://bot:pa/ss@example.com/org/repo").includes("pa/ss"));
  });

  it("drops default ports and keeps any other", () => {
    assert.equal(normalizeRepositoryUrl("https://example.com:443/r"), "https://example.com/r");
    assert.equal(normalizeRepositoryUrl("http://example.com:80/r"), "http://example.com/r");
    assert.equal(normalizeRepositoryUrl("https://example.com:8443/r"), "https://example.com:8443/r");
    assert.equal(normalizeRepositoryUrl("http://127.0.0.1:39000/r.git"), "http://127.0.0.1:39000/r");
    assert.equal(normalizeRepositoryUrl("ssh://git@example.com:2222/r"), "ssh://example.com:2222/r");
  });

  it("keeps http and https apart: they are different endpoints", () => {
    assert.notEqual(
      normalizeRepositoryUrl("http://example.com/r"),
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
