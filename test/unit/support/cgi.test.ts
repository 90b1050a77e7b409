import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { gitServiceOf, parseBasicAuth, parseCgiHead } from "../../support/cgi.ts";

describe("parseCgiHead", () => {
  it("waits for the blank line that ends the headers", () => {
    assert.equal(parseCgiHead(Buffer.from("Content-Type: text/plain\r\n")), undefined);
  });

  it("takes the status from a Status header and keeps the other headers in order", () => {
    const buffer = Buffer.from("Status: 403 Forbidden\r\nContent-Type: text/plain\r\nX-A: 1\r\n\r\nbody");
    const head = parseCgiHead(buffer);
    assert.deepEqual(head, {
      status: 403,
      statusText: "Forbidden",
      headers: [
        ["Content-Type", "text/plain"],
        ["X-A", "1"],
      ],
      bodyOffset: buffer.indexOf("body"),
    });
  });

  it("defaults to 200 and accepts bare LF line ends", () => {
    const buffer = Buffer.from("Content-Type: application/x-git-upload-pack-advertisement\n\n001e#");
    const head = parseCgiHead(buffer);
    assert.equal(head?.status, 200);
    assert.equal(buffer.subarray(head?.bodyOffset).toString(), "001e#");
  });

  it("rejects a malformed Status header", () => {
    assert.throws(() => parseCgiHead(Buffer.from("Status: nope\n\n")), /malformed CGI Status header/);
  });
});

describe("parseBasicAuth", () => {
  it("reads a user and a password that contains colons", () => {
    const header = `Basic ${Buffer.from("writer:pa:ss").toString("base64")}`;
    assert.deepEqual(parseBasicAuth(header), { username: "writer", password: "pa:ss" });
  });

  it("ignores missing, non-Basic and colon-less credentials", () => {
    assert.equal(parseBasicAuth(undefined), undefined);
    assert.equal(parseBasicAuth("Bearer abc"), undefined);
    assert.equal(parseBasicAuth(`Basic ${Buffer.from("nocolon").toString("base64")}`), undefined);
  });
});

describe("gitServiceOf", () => {
  it("reads the service from the advertisement query or the pack endpoint", () => {
    assert.equal(
      gitServiceOf("/r.git/info/refs", new URLSearchParams("service=git-receive-pack")),
      "receive-pack",
    );
    assert.equal(gitServiceOf("/r.git/git-upload-pack", new URLSearchParams()), "upload-pack");
    assert.equal(gitServiceOf("/r.git/HEAD", new URLSearchParams()), undefined);
  });
});
