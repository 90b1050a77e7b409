// (l) A repository that holds many files besides the target folder, as a monorepo does: the
// files are pushed with native git before the operator starts, under other/, in directories of
// 1,000, so phase (l) measures what they cost the operator writing its one folder.
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { GitServer } from "../test/support/gitserver.ts";
import { git } from "../test/support/gitcli.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../test/support/reaper.ts";

const identity = {
  GIT_AUTHOR_NAME: "Bench",
  GIT_AUTHOR_EMAIL: "bench@example.com",
  GIT_COMMITTER_NAME: "Bench",
  GIT_COMMITTER_EMAIL: "bench@example.com",
};

/** A file of the rest of the repository: a small manifest, unique so git stores each. */
const otherFile = (i: number) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other-${i}\n  namespace: elsewhere\ndata:\n  index: "${i}"\n`;

/** Pushes `count` files outside any target folder to `repository`'s main, in one commit. */
export async function prefillRepository(
  server: GitServer,
  repository: string,
  user: { username: string; password: string },
  count: number,
): Promise<void> {
  const work = makeOwnedTempDir("bench-large-repo");
  try {
    for (let i = 0; i < count; i++) {
      const dir = join(work, "other", String(Math.floor(i / 1000)));
      if (i % 1000 === 0) await mkdir(dir, { recursive: true });
      await writeFile(join(dir, `cm-${i}.yaml`), otherFile(i));
    }
    const url = new URL(server.repositoryUrl(repository));
    url.username = encodeURIComponent(user.username);
    url.password = encodeURIComponent(user.password);
    await git(["init", "--quiet", "--initial-branch=main"], { cwd: work });
    await git(["add", "-A"], { cwd: work });
    await git(["commit", "--quiet", "-m", `${count} files elsewhere`], { cwd: work, env: identity });
    await git(["push", "--quiet", url.toString(), "HEAD:refs/heads/main"], { cwd: work });
  } finally {
    removeOwnedTempDir(work);
  }
}
