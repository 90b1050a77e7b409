import type { WorkTree } from "../../../internal/git/folder/materialize.ts";

/**
 * An in-memory worktree: the commit boundary is recorded, not made, since these tests are about
 * files. It cannot name the paths between two commits, so an inventory reads it whole when it
 * moves, and `reads` counts every file read.
 */
export class MemoryTree implements WorkTree {
  readonly files = new Map<string, string>();
  readonly commits: { paths: string[]; message: string }[] = [];
  reads = 0;

  constructor(files: Record<string, string> = {}) {
    for (const [path, content] of Object.entries(files)) this.files.set(path, content);
  }

  get headCommit(): string | undefined {
    return this.commits.length === 0 ? undefined : `commit-${this.commits.length}`;
  }

  list(folder: string): Promise<string[]> {
    const prefix = folder === "" ? "" : `${folder}/`;
    return Promise.resolve([...this.files.keys()].filter((p) => p.startsWith(prefix)));
  }

  read(path: string): Promise<string | undefined> {
    this.reads++;
    return Promise.resolve(this.files.get(path));
  }

  write(path: string, content: string): Promise<void> {
    this.files.set(path, content);
    return Promise.resolve();
  }

  remove(path: string): Promise<void> {
    this.files.delete(path);
    return Promise.resolve();
  }

  exists(path: string): boolean {
    return this.files.has(path);
  }

  commit(paths: Iterable<string>, message: string): Promise<string | undefined> {
    this.commits.push({ paths: [...paths].sort(), message });
    return Promise.resolve(this.headCommit);
  }
}
