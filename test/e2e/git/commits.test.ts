// A clone's commits go through one git fast-import per clone; what reaches the server must be
// what `git add` and `git commit` would have made of the same worktree.
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { chmod, symlink } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { Clone } from "../../../internal/git/engine/clone.ts";
import { GitServer } from "../../support/gitserver.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";

const user = { username: "operator", password: "operator-password" };
const signature = { name: "Operator", email: "operator@example.com" };

/** This process's children that are a git fast-import. */
function importers(): number[] {
  return readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .filter((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
        const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
        return parent === process.pid && readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("fast-import");
      } catch {
        return false;
      }
    })
    .map(Number);
}

describe("a clone's commits", () => {
  let git: GitServer;
  let scratch: string;

  before(async () => {
    git = await GitServer.start({ users: [user] });
    scratch = makeOwnedTempDir("commits-test");
  });
  after(async () => {
    await git?.close();
    removeOwnedTempDir(scratch);
  });

  const cloneOf = async (name: string) => {
    const url = await git.createRepository(name);
    return new Clone({ dir: join(scratch, name), url, branch: "main", auth: user });
  };

  /** A clone that pushed one commit, a.yaml, and closed: what a restarted process finds. */
  const pushedAndClosed = async (name: string) => {
    const url = await git.createRepository(name);
    const dir = join(scratch, name);
    const first = new Clone({ dir, url, branch: "main", auth: user });
    const root = await first.fetchAndReset();
    await first.write("a.yaml", "a: 1\n");
    await first.commit(["a.yaml"], "a\n", signature, signature);
    const pushed = await first.push(root);
    await first.close();
    return { url, dir, pushed };
  };

  it("records odd names, modes and links exactly as git add would", async () => {
    const clone = await cloneOf("exact");
    const root = await clone.fetchAndReset();
    const files = {
      "apps/plain.yaml": "a: 1\n",
      "apps/with space.yaml": "b: 2\n",
      'apps/quote"d\\.yaml': "c: 3\n",
      "apps/ünïcode.yaml": "d: ä\n",
      "hack/run.sh": "#!/bin/sh\necho hi\n",
      "hack/group.sh": "#!/bin/sh\necho group\n",
    };
    for (const [path, content] of Object.entries(files)) await clone.write(path, content);
    await chmod(join(clone.dir, "hack/run.sh"), 0o755);
    // Executable for its group only: git records it as a plain file (its owner's bit decides).
    await chmod(join(clone.dir, "hack/group.sh"), 0o654);
    await symlink("plain.yaml", join(clone.dir, "apps/link.yaml"));
    const paths = [...Object.keys(files), "apps/link.yaml"];
    const commit = await clone.commit(paths, "Add files\n", signature, signature);
    assert.equal(await clone.push(root), commit);

    assert.equal(await git.branchHead("exact", "main"), commit);
    const listing = await git.gitIn("exact", ["ls-tree", "-r", "-z", "main"]);
    const entries = listing
      .split("\0")
      .filter(Boolean)
      .map((e) => `${e.split(" ")[0]} ${e.split("\t")[1]}`);
    assert.deepEqual(
      entries.sort(),
      [
        "100644 apps/plain.yaml",
        '100644 apps/quote"d\\.yaml',
        "100644 apps/with space.yaml",
        "100644 apps/ünïcode.yaml",
        "100755 hack/run.sh",
        "100644 hack/group.sh",
        "120000 apps/link.yaml",
      ].sort(),
    );
    for (const [path, content] of Object.entries(files)) {
      assert.equal(await git.gitIn("exact", ["show", `main:${path}`]), content.trimEnd());
    }
    assert.equal(
      await git.gitIn("exact", ["log", "-1", "--format=%an <%ae>|%cn <%ce>|%B", "main"]),
      "Operator <operator@example.com>|Operator <operator@example.com>|Add files",
    );
    await clone.close();
  });

  it("makes no commit when the files are written back as they were, and chains the ones it makes", async () => {
    const clone = await cloneOf("chain");
    const root = await clone.fetchAndReset();
    assert.equal(
      await clone.commit([], "nothing\n", signature, signature),
      undefined,
      "an empty branch stays empty",
    );
    await clone.write("a.yaml", "a: 1\n");
    const first = await clone.commit(["a.yaml"], "one\n", signature, signature);
    await clone.write("a.yaml", "a: 1\n");
    assert.equal(await clone.commit(["a.yaml"], "same\n", signature, signature), undefined);
    await clone.write("b.yaml", "b: 1\n");
    const second = await clone.commit(["b.yaml"], "two\n", signature, signature);
    await clone.remove("a.yaml");
    const third = await clone.commit(["a.yaml"], "three\n", signature, signature);
    assert.equal(clone.headCommit, third);
    assert.equal(await clone.push(root), third);

    assert.equal(
      await git.gitIn("chain", ["rev-list", "--parents", "main"]),
      [`${third} ${second}`, `${second} ${first}`, first].join("\n"),
    );
    assert.equal(await git.gitIn("chain", ["ls-tree", "--name-only", "main"]), "b.yaml");
    await clone.close();
  });

  it("streams commits without waiting for each, each as its files were when sent, and drops one that changed nothing", async () => {
    const clone = await cloneOf("streamed");
    const root = await clone.fetchAndReset();
    const heard: (string | undefined)[] = [];
    const send = (path: string, content: string, message: string) => {
      // The write is synchronous and the send does not wait: nothing is answered until settle().
      void clone.write(path, content);
      clone.send([path], message, signature, signature, (commit) => heard.push(commit));
    };
    send("a.yaml", "a: 1\n", "one\n");
    send("a.yaml", "a: 1\n", "same\n");
    send("b.yaml", "b: 1\n", "two\n");
    send("b.yaml", "b: 2\n", "three\n");
    assert.deepEqual(heard, [], "no commit waits for the one before it");
    await clone.settle();

    assert.equal(heard.length, 4);
    const [one, same, two, three] = heard;
    assert.equal(same, undefined, "the commit that changed nothing is dropped");
    assert.equal(clone.headCommit, three);
    assert.equal(await clone.push(root), three);
    assert.equal(
      await git.gitIn("streamed", ["rev-list", "--parents", "main"]),
      [`${three} ${two}`, `${two} ${one}`, one].join("\n"),
      "the commit sent on the dropped one was sent again on the one before it",
    );
    assert.equal(await git.gitIn("streamed", ["log", "--format=%s", "main"]), "three\ntwo\none");
    assert.equal(await git.gitIn("streamed", ["show", "main^:b.yaml"]), "b: 1", "as the file was when sent");
    assert.equal(await git.gitIn("streamed", ["show", "main:b.yaml"]), "b: 2");
    await clone.close();
  });

  it("commits on a fetched tip after a reset, and throws the discarded commits away", async () => {
    const clone = await cloneOf("reset");
    await git.pushForeignCommit("reset", { files: { "README.md": "# r\n" } });
    await clone.fetchAndReset();
    await clone.write("mine.yaml", "m: 1\n");
    await clone.commit(["mine.yaml"], "lost\n", signature, signature);
    const foreign = await git.pushForeignCommit("reset", { files: { "theirs.yaml": "t: 1\n" } });

    const root = await clone.fetchAndReset();
    assert.deepEqual(root, { from: "branch", commit: foreign });
    assert.equal(clone.exists("mine.yaml"), false, "the reset removed the discarded commit's file");
    await clone.write("mine.yaml", "m: 2\n");
    const replayed = await clone.commit(["mine.yaml"], "replayed\n", signature, signature);
    assert.equal(await clone.push(root), replayed);
    assert.equal(await git.gitIn("reset", ["rev-parse", "main^"]), foreign);
    assert.equal(await git.gitIn("reset", ["show", "main:mine.yaml"]), "m: 2");
    await clone.close();
  });

  it("resets a restarted clone onto the tip it pushed itself without fetching, and fetches a foreign one", async () => {
    const { url, dir, pushed } = await pushedAndClosed("restart");
    // Each git command that reads the remote opens with one advertisement: ls-remote, then fetch.
    const sessions = () =>
      git.requests.filter((r) => r.repository === "restart" && r.service === "upload-pack" && r.advertisement)
        .length;

    const before = sessions();
    const restarted = new Clone({ dir, url, branch: "main", auth: user });
    assert.deepEqual(await restarted.fetchAndReset(), { from: "branch", commit: pushed });
    assert.equal(sessions(), before + 1, "one ls-remote, and no fetch: its own tip is in the clone");
    assert.equal(await restarted.read("a.yaml"), "a: 1\n");

    const foreign = await git.pushForeignCommit("restart", { files: { "b.yaml": "b: 1\n" } });
    assert.deepEqual(await restarted.fetchAndReset(), { from: "branch", commit: foreign });
    const after = before + 1;
    assert.ok(sessions() >= after + 2, "a commit it does not hold is fetched: ls-remote, then fetch");
    assert.equal(await restarted.read("b.yaml"), "b: 1\n");
    await restarted.close();
  });

  it("trusts the checkout a clone closed clean at the tip it pushed, without a reset, once; one closed with a change it did not commit, or never closed, is reset", async () => {
    const { url, dir, pushed } = await pushedAndClosed("closed-clean");
    // Dropped after the close: a reset's clean would remove it, so it shows whether one ran.
    const stray = join(dir, "stray.txt");
    writeFileSync(stray, "left\n");

    const trusted = new Clone({ dir, url, branch: "main", auth: user });
    assert.deepEqual(await trusted.fetchAndReset(), { from: "branch", commit: pushed });
    assert.ok(existsSync(stray), "no reset: the close found the worktree clean at the tip");
    assert.equal(await trusted.read("a.yaml"), "a: 1\n");
    // Never closed, as a killed process: the marker was taken at the start, so the next one resets.
    const afterCrash = new Clone({ dir, url, branch: "main", auth: user });
    assert.deepEqual(await afterCrash.fetchAndReset(), { from: "branch", commit: pushed });
    assert.ok(!existsSync(stray), "reset: nothing said the checkout was clean");

    await afterCrash.write("b.yaml", "b: 1\n");
    await afterCrash.close();
    const afterDirty = new Clone({ dir, url, branch: "main", auth: user });
    assert.deepEqual(await afterDirty.fetchAndReset(), { from: "branch", commit: pushed });
    assert.ok(!existsSync(join(dir, "b.yaml")), "reset: the close found a file it never committed");
    assert.equal(await afterDirty.read("a.yaml"), "a: 1\n");
    await afterDirty.close();
  });

  it("keeps the index at the head, so a reset onto a foreign commit rewrites only what it changed", async () => {
    const clone = await cloneOf("replay");
    const root = await clone.fetchAndReset();
    assert.deepEqual(await clone.list("f"), [], "the worker's folder scan checks the folder out");
    const paths = ["f/a.yaml", "f/b.yaml", "f/c.yaml"];
    for (const path of paths) await clone.write(path, `${path}: 1\n`);
    await clone.commit(paths, "three\n", signature, signature);
    await clone.write("f/a.yaml", "f/a.yaml: 2\n");
    await clone.commit(["f/a.yaml"], "a again\n", signature, signature);
    await clone.push(root);
    const inode = (path: string) => statSync(join(clone.dir, path)).ino;
    const before = paths.map(inode);

    await git.pushForeignCommit("replay", { files: { "f/c.yaml": "foreign: 1\n" } });
    await clone.fetchAndReset();
    assert.equal(await clone.read("f/c.yaml"), "foreign: 1\n");
    assert.deepEqual(
      paths.slice(0, 2).map(inode),
      before.slice(0, 2),
      "the files it did not change stay as they are",
    );
    await clone.close();
  });

  it("leaves no process running once closed or discarded", async () => {
    const [closed, discarded] = [await cloneOf("closed"), await cloneOf("discarded")];
    for (const clone of [closed, discarded]) {
      await clone.fetchAndReset();
      await clone.write("a.yaml", "a: 1\n");
      await clone.commit(["a.yaml"], "a\n", signature, signature);
    }
    assert.equal(importers().length, 2, "each clone streams its commits to one importer");
    await closed.close();
    await discarded.discard();
    assert.deepEqual(importers(), []);
  });
});
