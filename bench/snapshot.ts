// Waits for the initial snapshot: the remote's main holding one file per ConfigMap under the
// folder (a namespace's, or the target's over several). `git ls-tree` runs only when the tip
// moved; the time taken is the push's own, from the push log, so the poll interval adds nothing
// to it.
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import type { GitServer } from "../test/support/gitserver.ts";
import type { PushLog } from "./pushlog.ts";
import { sleep } from "../internal/timing/sleep.ts";
import { progress } from "./sampler.ts";

export interface SnapshotResult {
  files: number;
  /** Operator start to the push that completed the folder; undefined if it never did. */
  ms: number | undefined;
  /** Operator start to the first push of any kind. */
  firstPushMs: number | undefined;
  pushes: number;
  commits: number;
  /** Loose objects in the worker's clone when the wait ended: how far staging got (one blob per file). */
  cloneObjects: number;
}

/** Loose objects in every clone under the operator's worker root. */
export async function cloneObjects(workerRoot: string): Promise<number> {
  let count = 0;
  const list = (dir: string) => readdir(dir).catch(() => [] as string[]);
  for (const clone of await list(workerRoot)) {
    const objects = join(workerRoot, clone, ".git", "objects");
    for (const fanout of await list(objects)) {
      if (/^[0-9a-f]{2}$/.test(fanout)) count += (await list(join(objects, fanout))).length;
    }
  }
  return count;
}

export async function waitForSnapshot(options: {
  git: GitServer;
  repository: string;
  folder: string;
  size: number;
  started: number;
  timeoutMs: number;
  log: PushLog;
  workerRoot: string;
  /** Which files under the folder count; every file unless told. */
  only?: (path: string) => boolean;
}): Promise<SnapshotResult> {
  const { git, repository, folder, size, started, log, workerRoot } = options;
  const only = options.only ?? (() => true);
  const deadline = started + options.timeoutMs;
  let head: string | undefined;
  let files = 0;
  let lastReport = Date.now();
  let ms: number | undefined;
  while (Date.now() < deadline) {
    const tip = await git.branchHead(repository, "main");
    if (tip && tip !== head) {
      head = tip;
      files = (await git.listFiles(repository, "main", folder)).filter(only).length;
      if (files >= size) {
        ms = ((await log.landedAt(tip)) ?? Date.now()) - started;
        break;
      }
    }
    if (Date.now() - lastReport > 10_000) {
      lastReport = Date.now();
      const staged = await cloneObjects(workerRoot);
      progress(
        `  ${files}/${size} files on the remote, ${staged} objects in the worker's clone, after ${Math.round((Date.now() - started) / 1000)} s`,
      );
    }
    await sleep(250);
  }
  const pushes = await log.pushes();
  const commits = head ? Number(await git.gitIn(repository, ["rev-list", "--count", "main"])) : 0;
  return {
    files,
    ms,
    firstPushMs: pushes[0] ? pushes[0].at - started : undefined,
    pushes: pushes.length,
    commits,
    cloneObjects: await cloneObjects(workerRoot),
  };
}
