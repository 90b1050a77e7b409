// The reference limit: the same files written with the native git CLI into a fresh clone of a
// fresh repository on the same Git server, in one commit and one push. No operator could beat
// this by much; it says how far the operator is from plain git.
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { GitServer } from "../test/support/gitserver.ts";
import { git } from "../test/support/gitcli.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../test/support/reaper.ts";

export interface ReferenceRun {
  totalMs: number;
  cloneMs: number;
  writeMs: number;
  addCommitMs: number;
  pushMs: number;
}

// No automatic gc: with 10,000 loose objects `git commit` would start a detached `git gc --auto`
// that competes with the next phase for CPU and writes into the clone while it is being removed.
const noAutoGc = {
  GIT_CONFIG_COUNT: "2",
  GIT_CONFIG_KEY_0: "gc.auto",
  GIT_CONFIG_VALUE_0: "0",
  GIT_CONFIG_KEY_1: "maintenance.auto",
  GIT_CONFIG_VALUE_1: "false",
};

const signature = {
  ...noAutoGc,
  GIT_AUTHOR_NAME: "Bench",
  GIT_AUTHOR_EMAIL: "bench@example.com",
  GIT_COMMITTER_NAME: "Bench",
  GIT_COMMITTER_EMAIL: "bench@example.com",
};

export interface ReferenceResult extends ReferenceRun {
  files: number;
  /** Every run; the fields above are the run with the median total. */
  runs: ReferenceRun[];
}

/** Writes the files `repeats` times, each into its own fresh repository; returns the median run. */
export async function referenceWrite(
  server: GitServer,
  repository: string,
  user: { username: string; password: string },
  files: Map<string, string>,
  repeats: number,
): Promise<ReferenceResult> {
  const runs: ReferenceRun[] = [];
  for (let k = 0; k < Math.max(1, repeats); k++)
    runs.push(await writeOnce(server, `${repository}-${k}`, user, files));
  const median = [...runs].sort((a, b) => a.totalMs - b.totalMs)[Math.floor((runs.length - 1) / 2)]!;
  return { files: files.size, ...median, runs };
}

async function writeOnce(
  server: GitServer,
  repository: string,
  user: { username: string; password: string },
  files: Map<string, string>,
): Promise<ReferenceRun> {
  const url = new URL(await server.createRepository(repository));
  url.username = encodeURIComponent(user.username);
  url.password = encodeURIComponent(user.password);
  const root = makeOwnedTempDir("bench-reference");
  const work = join(root, "clone");
  try {
    const t0 = performance.now();
    await git(["clone", "--quiet", url.toString(), work], { env: noAutoGc });
    const t1 = performance.now();
    const entries = [...files];
    for (let first = 0; first < entries.length; first += 200) {
      await Promise.all(
        entries.slice(first, first + 200).map(async ([path, content]) => {
          await mkdir(dirname(join(work, path)), { recursive: true });
          await writeFile(join(work, path), content);
        }),
      );
    }
    const t2 = performance.now();
    await git(["add", "--all"], { cwd: work, env: noAutoGc });
    await git(["commit", "--quiet", "-m", `Write ${files.size} files`], { cwd: work, env: signature });
    const t3 = performance.now();
    await git(["push", "--quiet", "origin", "HEAD:refs/heads/main"], { cwd: work, env: noAutoGc });
    const t4 = performance.now();
    return {
      totalMs: t4 - t0,
      cloneMs: t1 - t0,
      writeMs: t2 - t1,
      addCommitMs: t3 - t2,
      pushMs: t4 - t3,
    };
  } finally {
    removeOwnedTempDir(root);
  }
}
