// A target folder in a large repository: the clone fetches no blob and checks out no file it
// does not write or build from, and its commits keep every other file as it was.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { Clone } from "../../../internal/git/engine/clone.ts";
import { kustomizationReferences } from "../../../internal/manifest/index.ts";
import { GitServer } from "../../support/gitserver.ts";
import { git as gitCli } from "../../support/gitcli.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";

const user = { username: "operator", password: "operator-password" };
const signature = { name: "Operator", email: "operator@example.com" };
const others = 200;

function repositoryFiles(): Record<string, string> {
  const files: Record<string, string> = {
    "README.md": "# monorepo\n",
    "base/kustomization.yaml": "resources:\n  - cm.yaml\n",
    "base/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: base\n",
    "overlays/prod/kustomization.yaml": "namespace: prod\nresources:\n  - ../../base\n  - app.yaml\n",
    "overlays/prod/app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n",
  };
  for (let i = 0; i < others; i++) files[`other/${i % 10}/f${i}.yaml`] = `index: ${i}\n`;
  return files;
}

/** Objects the clone's history names that it does not hold: what the partial clone left out. */
async function missingObjects(dir: string): Promise<number> {
  const listing = await gitCli(["rev-list", "--objects", "--missing=print", "--all"], { cwd: dir });
  return listing.split("\n").filter((line) => line.startsWith("?")).length;
}

describe("a clone of a large repository", () => {
  let git: GitServer;
  let scratch: string;

  before(async () => {
    git = await GitServer.start({ users: [user] });
    scratch = makeOwnedTempDir("sparse-test");
  });
  after(async () => {
    await git?.close();
    removeOwnedTempDir(scratch);
  });

  const seeded = async (name: string) => {
    const url = await git.createRepository(name);
    await git.pushForeignCommit(name, { files: repositoryFiles() });
    return new Clone({
      dir: join(scratch, name),
      url,
      branch: "main",
      auth: user,
      buildsFrom: kustomizationReferences,
    });
  };

  it("checks out only the target folder and what its kustomization builds from, and commits keep the rest", async () => {
    const clone = await seeded("monorepo");
    const root = await clone.fetchAndReset();
    assert.deepEqual((await clone.list("overlays/prod")).sort(), [
      "overlays/prod/app.yaml",
      "overlays/prod/kustomization.yaml",
    ]);
    assert.equal(clone.exists("base/cm.yaml"), true, "the overlay's base is checked out");
    assert.equal(existsSync(join(clone.dir, "other")), false, "nothing else is");
    assert.ok((await missingObjects(clone.dir)) >= others, "and no other file's content was fetched");

    await clone.write("overlays/prod/app.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app2\n");
    const commit = await clone.commit(["overlays/prod/app.yaml"], "Edit app\n", signature, signature);
    assert.equal(await clone.push(root), commit);
    const tree = await git.gitIn("monorepo", ["ls-tree", "-r", "--name-only", "main"]);
    assert.equal(tree.split("\n").filter((p) => p.startsWith("other/")).length, others);
    assert.equal(await git.gitIn("monorepo", ["rev-list", "--count", "main"]), "2");
    await clone.close();
  });

  it("checks out a directory a fetched commit makes the folder build from", async () => {
    const clone = await seeded("moving");
    await clone.fetchAndReset();
    await clone.list("overlays/prod");
    await git.pushForeignCommit("moving", {
      files: {
        "extra/kustomization.yaml": "resources:\n  - extra.yaml\n",
        "extra/extra.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n",
        "overlays/prod/kustomization.yaml": "resources:\n  - ../../base\n  - ../../extra\n  - app.yaml\n",
      },
    });
    await clone.fetchAndReset();
    assert.equal(clone.exists("extra/extra.yaml"), true);
    assert.equal(existsSync(join(clone.dir, "other")), false);
    await clone.close();
  });

  it("checks everything out for a target at the repository's root", async () => {
    const clone = await seeded("whole");
    await clone.fetchAndReset();
    const files = await clone.list("");
    assert.equal(files.filter((p) => p.startsWith("other/")).length, others);
    await clone.close();
  });
});
