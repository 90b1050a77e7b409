// The clone's sparse checkout: which directories it checks out, kept in step with git's own list
// (`git sparse-checkout`, cone mode). A target folder is added when its worker first lists it,
// with every directory its files build from outside it (sparse.ts decides which); a reset reads
// them again, since a fetched commit can name a new base. What a file builds from (a
// kustomization's resources) is the caller's to say, as `BuildsFrom`: the engine knows no
// kustomize. A clone made without a sparse checkout (before partial clones) stays a full one.
import * as fs from "node:fs";
import { readdir, rm } from "node:fs/promises";
import { join, relative } from "node:path";
import { coverOf, covers, uncoveredReferences } from "./sparse.ts";
import { readFileAt } from "./worktreefiles.ts";

/**
 * The entries a checked-out file names to build from, relative to its directory (a
 * kustomization's `resources:`, read by internal/manifest); none for a file that builds from
 * nothing. `read` is the file's content, read only when asked.
 */
export type BuildsFrom = (path: string, read: () => string) => readonly string[];

/** The git calls the sparse checkout makes in its clone. */
export interface SparseGit {
  /** A local call. */
  local(args: string[]): Promise<{ stdout: Buffer }>;
  /** A call that may fetch the blobs of the files it checks out: with the transport. */
  lazy(args: string[]): Promise<unknown>;
}

export class SparseCheckout {
  /** The directories this process checked out, once git's own list is read. */
  private included: Set<string> | undefined;

  constructor(
    private readonly dir: string,
    private readonly git: SparseGit,
    private readonly buildsFrom: BuildsFrom,
  ) {}

  /** Whether the clone checks out only some directories: the sparse checkout it was made with. */
  private get sparse(): boolean {
    return fs.existsSync(join(this.dir, ".git", "info", "sparse-checkout"));
  }

  /**
   * Checks a target folder out, with every directory its kustomizations build from outside it.
   * A folder at the repository's root checks out everything.
   */
  async include(folder: string): Promise<void> {
    const included = await this.folders();
    if (!this.sparse || covers(coverOf(included), folder)) return;
    if (coverOf([folder]) === "all") {
      await this.git.lazy(["sparse-checkout", "disable"]);
      await rm(join(this.dir, ".git", "info", "sparse-checkout"), { force: true });
      this.included = undefined;
      return;
    }
    included.add(folder);
    await this.git.lazy(["sparse-checkout", "add", "--", folder]);
    await this.includeReferences(folder);
  }

  /** After a reset: what the fetched files build from is checked out too. */
  async followReferences(): Promise<void> {
    for (const folder of await this.folders()) await this.includeReferences(folder);
  }

  /** The directories checked out: read from git once per process, then kept. */
  private async folders(): Promise<Set<string>> {
    if (!this.sparse) return new Set();
    if (!this.included) {
      const { stdout } = await this.git.local(["sparse-checkout", "list"]);
      this.included = new Set(
        stdout
          .toString("utf8")
          .split("\n")
          .filter((d) => d !== ""),
      );
    }
    return this.included;
  }

  /** Includes what the files under `folder` build from directories not checked out. */
  private async includeReferences(folder: string): Promise<void> {
    for (const path of await filesUnder(this.dir, folder)) {
      const entries = this.buildsFrom(path, () => readFileAt(this.dir, path) ?? "");
      if (entries.length === 0) continue;
      const cover = coverOf((await this.folders()).values());
      for (const dir of uncoveredReferences(path, entries, cover)) await this.include(dir);
    }
  }
}

/** Every file under `folder` ("" for the root) of the worktree at `dir`, relative to it. */
export async function filesUnder(dir: string, folder: string): Promise<string[]> {
  const root = join(dir, folder);
  if (!fs.existsSync(root)) return [];
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .filter((p) => !p.startsWith(".git/") && p !== ".git");
}
