import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { configEnv } from "../../internal/git/engine/transport.ts";
import { git } from "../support/gitcli.ts";
import { GitServer, type GitUser } from "../support/gitserver.ts";

const writer: GitUser = { username: "writer", password: "s3cret" };
const reader: GitUser = { username: "reader", password: "r3ad", access: "read" };
const author = { name: "Test Author", email: "test@example.com" };

/** Basic auth as the operator sends it: a header from the environment, never in the URL. */
function authAs(user: GitUser) {
  const basic = Buffer.from(`${user.username}:${user.password}`).toString("base64");
  return configEnv([["http.extraHeader", `Authorization: Basic ${basic}`]]);
}

/** The stderr of a git call that must fail. */
async function failure(args: string[], cwd: string, user: GitUser): Promise<string> {
  return git(args, { cwd, env: authAs(user) }).then(
    () => assert.fail(`git ${args.join(" ")} succeeded`),
    (err: unknown) => String((err as { stderr?: unknown }).stderr),
  );
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
    await git(["clone", "-q", "--single-branch", "-b", "main", url, dir], { env: authAs(user) });
    return dir;
  }

  async function commitFile(dir: string, path: string, content: string): Promise<string> {
    await writeFile(join(dir, path), content);
    const env = { GIT_AUTHOR_NAME: author.name, GIT_AUTHOR_EMAIL: author.email };
    await git(["add", path], { cwd: dir });
    await git(
      [
        "-c",
        `user.name=${author.name}`,
        "-c",
        `user.email=${author.email}`,
        "commit",
        "-q",
        "-m",
        `write ${path}`,
      ],
      { cwd: dir, env },
    );
    return git(["rev-parse", "HEAD"], { cwd: dir });
  }

  it("serves clone, commit and push with the git CLI over smart HTTP with basic auth", async () => {
    const url = await server.createRepository("clone-push");
    await server.pushForeignCommit("clone-push", { files: { "README.md": "# seeded\n" } });
    const dir = await cloneAs(writer, url, "clone-push");
    assert.equal(await readFile(join(dir, "README.md"), "utf8"), "# seeded\n");

    const oid = await commitFile(dir, "a.yaml", "a: 1\n");
    await git(["push", "-q", "origin", "main"], { cwd: dir, env: authAs(writer) });
    assert.equal(await server.branchHead("clone-push", "main"), oid);
    assert.equal(await server.gitIn("clone-push", ["show", "main:a.yaml"]), "a: 1");
  });

  it("rejects a push whose parent is stale, distinguishably from an auth failure", async () => {
    const url = await server.createRepository("stale");
    await server.pushForeignCommit("stale", { files: { "README.md": "# seeded\n" } });
    const dir = await cloneAs(writer, url, "stale");
    const foreign = await server.pushForeignCommit("stale", { files: { "foreign.yaml": "x: 1\n" } });
    await commitFile(dir, "ours.yaml", "y: 1\n");

    const rejection = await failure(["push", "origin", "main"], dir, writer);
    assert.match(rejection, /\[rejected\].*\(fetch first\)/, rejection);
    assert.equal(await server.branchHead("stale", "main"), foreign, "the foreign commit stays");

    const badPassword = { username: writer.username, password: "wrong" };
    const authFailure = await failure(["push", "origin", "main"], dir, badPassword);
    // git was refused with 401 and, with prompts off, had no other credential to try.
    assert.match(authFailure, /could not read Username|Authentication failed/, authFailure);
    assert.ok(!authFailure.includes("wrong"), "no password in git's message");
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

    const rejection = await failure(["push", "origin", "main"], dir, writer);
    assert.match(rejection, /\[remote rejected\]/, rejection);
    assert.equal(await server.branchHead("race", "main"), foreign, "the foreign commit stays");
  });

  it("lets a read-only user fetch but not open a receive-pack session", async () => {
    const url = await server.createRepository("read-only");
    await server.pushForeignCommit("read-only", { files: { "README.md": "# seeded\n" } });
    const dir = await cloneAs(reader, url, "read-only");
    await commitFile(dir, "b.yaml", "b: 1\n");
    const refused = await failure(["push", "origin", "main"], dir, reader);
    assert.match(refused, /403/, refused);
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
    const down = await failure(["ls-remote", url], scratch, writer);
    assert.match(down, /Connection refused|Couldn't connect/, down);

    await server.start();
    assert.equal(server.port, port);
    const refs = await git(["ls-remote", url, "refs/heads/main"], { env: authAs(writer) });
    assert.equal(refs.split("\t")[0], seeded);
  });
});
