import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import * as fs from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import * as isogit from "isomorphic-git";
import http from "isomorphic-git/http/node";
import { GitServer, type GitUser } from "../support/gitserver.ts";

const writer: GitUser = { username: "writer", password: "s3cret" };
const reader: GitUser = { username: "reader", password: "r3ad", access: "read" };
const author = { name: "Test Author", email: "test@example.com" };

function authAs(user: GitUser) {
  return { onAuth: () => ({ username: user.username, password: user.password }) };
}

describe("git server harness", () => {
  let server: GitServer;
  let scratch: string;

  before(async () => {
    server = await GitServer.start({ users: [writer, reader] });
    scratch = await mkdtemp(join(tmpdir(), "gitserver-test-"));
  });
  after(async () => {
    await server?.close();
    await rm(scratch, { recursive: true, force: true });
  });

  async function cloneAs(user: GitUser, url: string, name: string): Promise<string> {
    const dir = join(scratch, name);
    await isogit.clone({ fs, http, dir, url, ref: "main", singleBranch: true, ...authAs(user) });
    return dir;
  }

  async function commitFile(dir: string, path: string, content: string): Promise<string> {
    await writeFile(join(dir, path), content);
    await isogit.add({ fs, dir, filepath: path });
    return isogit.commit({ fs, dir, message: `write ${path}`, author });
  }

  it("serves clone, commit and push with isomorphic-git over smart HTTP with basic auth", async () => {
    const url = await server.createRepository("clone-push");
    await server.pushForeignCommit("clone-push", { files: { "README.md": "# seeded\n" } });
    const dir = await cloneAs(writer, url, "clone-push");
    assert.equal(await readFile(join(dir, "README.md"), "utf8"), "# seeded\n");

    const oid = await commitFile(dir, "a.yaml", "a: 1\n");
    const result = await isogit.push({ fs, http, dir, remote: "origin", ref: "main", ...authAs(writer) });
    assert.equal(result.ok, true);
    assert.equal(await server.branchHead("clone-push", "main"), oid);
    assert.equal(await server.gitIn("clone-push", ["show", "main:a.yaml"]), "a: 1");
  });

  it("rejects a push whose parent is stale, distinguishably from an auth failure", async () => {
    const url = await server.createRepository("stale");
    await server.pushForeignCommit("stale", { files: { "README.md": "# seeded\n" } });
    const dir = await cloneAs(writer, url, "stale");
    const foreign = await server.pushForeignCommit("stale", { files: { "foreign.yaml": "x: 1\n" } });
    await commitFile(dir, "ours.yaml", "y: 1\n");

    const rejection = await isogit
      .push({ fs, http, dir, remote: "origin", ref: "main", ...authAs(writer) })
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    assert.ok(rejection instanceof isogit.Errors.PushRejectedError, `unexpected ${String(rejection)}`);
    assert.equal(rejection.data.reason, "not-fast-forward");
    assert.equal(await server.branchHead("stale", "main"), foreign, "the foreign commit stays");

    const badPassword = { username: writer.username, password: "wrong" };
    const authFailure = await isogit
      .push({ fs, http, dir, remote: "origin", ref: "main", ...authAs(badPassword) })
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    assert.ok(authFailure instanceof isogit.Errors.HttpError, `unexpected ${String(authFailure)}`);
    assert.equal(authFailure.data.statusCode, 401);
  });

  it("refuses, by the server's compare-and-swap, an update whose branch moved after the advertisement", async () => {
    const url = await server.createRepository("race");
    await server.pushForeignCommit("race", { files: { "README.md": "# seeded\n" } });
    const dir = await cloneAs(writer, url, "race");
    await commitFile(dir, "ours.yaml", "y: 1\n");
    let foreign = "";
    server.interceptNextPush(async () => {
      foreign = await server.pushForeignCommit("race", { files: { "foreign.yaml": "x: 1\n" } });
    });

    const rejection = await isogit
      .push({ fs, http, dir, remote: "origin", ref: "main", ...authAs(writer) })
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    assert.ok(rejection instanceof isogit.Errors.GitPushError, `unexpected ${String(rejection)}`);
    assert.equal(rejection.data.result.refs["refs/heads/main"]?.ok, false);
    assert.equal(await server.branchHead("race", "main"), foreign, "the foreign commit stays");
  });

  it("lets a read-only user fetch but not open a receive-pack session", async () => {
    const url = await server.createRepository("read-only");
    await server.pushForeignCommit("read-only", { files: { "README.md": "# seeded\n" } });
    const dir = await cloneAs(reader, url, "read-only");
    await commitFile(dir, "b.yaml", "b: 1\n");
    const refused = await isogit
      .push({ fs, http, dir, remote: "origin", ref: "main", ...authAs(reader) })
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    assert.ok(refused instanceof isogit.Errors.HttpError, `unexpected ${String(refused)}`);
    assert.equal(refused.data.statusCode, 403);
    assert.ok(
      server.requests.some(
        (r) =>
          r.repository === "read-only" &&
          r.service === "receive-pack" &&
          r.username === "reader" &&
          r.status === 403,
      ),
    );
  });

  it("pushes foreign commits that delete files and start new branches from a parent", async () => {
    await server.createRepository("foreign");
    const base = await server.pushForeignCommit("foreign", {
      files: { "keep.yaml": "k: 1\n", "drop.yaml": "d: 1\n" },
    });
    await server.pushForeignCommit("foreign", { files: { "drop.yaml": null }, message: "drop it" });
    assert.equal(await server.gitIn("foreign", ["ls-tree", "--name-only", "main"]), "keep.yaml");
    assert.equal(
      await server.gitIn("foreign", ["log", "-1", "--format=%an <%ae> %s", "main"]),
      "Foreign Author <foreign@example.com> drop it",
    );

    const feature = await server.pushForeignCommit("foreign", {
      branch: "feature",
      startFrom: "main",
      files: { "f.yaml": "f: 1\n" },
    });
    assert.equal(await server.gitIn("foreign", ["rev-parse", `${feature}~2`]), base);
    assert.equal(await server.branchHead("foreign", "missing"), undefined);
  });

  it("goes down and comes back on the same port with its repositories", async () => {
    const url = await server.createRepository("outage");
    const seeded = await server.pushForeignCommit("outage", { files: { "README.md": "# seeded\n" } });
    const port = server.port;

    await server.stop();
    const down = await isogit.getRemoteInfo2({ http, url, protocolVersion: 1, ...authAs(writer) }).then(
      () => undefined,
      (err: unknown) => err,
    );
    // A pooled keep-alive connection the outage cut shows as a reset; a new one is refused.
    assert.ok(
      ["ECONNREFUSED", "ECONNRESET"].includes(String((down as NodeJS.ErrnoException | undefined)?.code)),
    );

    await server.start();
    assert.equal(server.port, port);
    const info = await isogit.getRemoteInfo2({ http, url, protocolVersion: 1, ...authAs(writer) });
    assert.equal(info.refs?.find((r) => r.ref === "refs/heads/main")?.oid, seeded);
  });
});
