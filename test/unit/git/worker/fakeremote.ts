// An in-memory repository and its remote, for the publication cycle's tests: the boundary the
// worker talks to, doubled so fetches, resets and pushes can be counted and a remote moved
// between two steps. The git semantics these tests rely on are pinned against a real server
// in test/e2e/git.
import { RemoteMovedError, type Repository } from "../../../../internal/git/engine/clone.ts";
import type { WorkTree } from "../../../../internal/git/folder/materialize.ts";
import { rootHolds, type Advertisement, type Root } from "../../../../internal/git/engine/root.ts";

type Files = Map<string, string>;

export class FakeRemote {
  tip: string | undefined;
  readonly commits = new Map<string, Files>();
  private next = 0;

  /** A commit by somebody else: `change` edits a copy of the tip's files. */
  pushForeign(change: (files: Files) => void): string {
    const files = new Map(this.tip ? this.commits.get(this.tip) : []);
    change(files);
    return (this.tip = this.store(files));
  }

  store(files: Files): string {
    const id = `c${++this.next}`;
    this.commits.set(id, new Map(files));
    return id;
  }

  advertisement(): Advertisement {
    return { refs: new Map(this.tip ? [["refs/heads/main", this.tip]] : []), head: "refs/heads/main" };
  }

  files(): Files {
    return new Map(this.tip ? this.commits.get(this.tip) : []);
  }
}

export class FakeClone implements Repository, WorkTree {
  readonly files: Files = new Map();
  readonly branch = "main";
  headCommit: string | undefined;
  fetches = 0;
  pushes = 0;
  commits = 0;
  discards = 0;
  /** Makes the next write throw, as a disk that filled up would; or throw this error. */
  failNextWrite: boolean | Error = false;
  /** Makes every push fail as an unreachable server does. */
  unreachable = false;

  constructor(readonly remote: FakeRemote) {}

  advertise(): Promise<Advertisement> {
    return Promise.resolve(this.remote.advertisement());
  }

  fetchAndReset(): Promise<Root> {
    this.fetches++;
    this.files.clear();
    for (const [path, content] of this.remote.files()) this.files.set(path, content);
    this.headCommit = this.remote.tip;
    return Promise.resolve(this.remote.tip ? { from: "branch", commit: this.remote.tip } : { from: "empty" });
  }

  holds(root: Root): Promise<boolean> {
    return Promise.resolve(rootHolds(this.remote.advertisement(), "main", root));
  }

  async push(root: Root): Promise<string> {
    if (this.unreachable) throw new Error("connect ECONNREFUSED");
    if (!(await this.holds(root))) throw new RemoteMovedError("moved");
    this.pushes++;
    this.remote.tip = this.headCommit;
    return this.headCommit!;
  }

  // Only a signed push rewrites commits, and this remote signs nothing.
  firstParents(): Promise<string[]> {
    return Promise.reject(new Error("the fake remote keeps no first-parent line"));
  }

  setCycleDeadline(): void {}

  close(): Promise<void> {
    return Promise.resolve();
  }

  // Its commits are made at once: nothing is ever in flight.
  settle(): Promise<void> {
    return Promise.resolve();
  }

  discard(): Promise<void> {
    this.discards++;
    this.files.clear();
    this.headCommit = undefined;
    return Promise.resolve();
  }

  list(folder: string): Promise<string[]> {
    return Promise.resolve([...this.files.keys()].filter((p) => p.startsWith(`${folder}/`)));
  }

  read(path: string): Promise<string | undefined> {
    return Promise.resolve(this.files.get(path));
  }

  write(path: string, content: string): Promise<void> {
    if (this.failNextWrite) {
      const error = this.failNextWrite === true ? new Error("no space left on device") : this.failNextWrite;
      this.failNextWrite = false;
      this.files.set(path, "half-written");
      return Promise.reject(error);
    }
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

  commit(
    _paths?: Iterable<string>,
    _message?: string,
    _author?: unknown,
    _committer?: unknown,
    allowEmpty = false,
  ): Promise<string | undefined> {
    const same = this.headCommit && sameFiles(this.remote.commits.get(this.headCommit), this.files);
    if (same && !allowEmpty) return Promise.resolve(undefined);
    this.commits++;
    this.headCommit = this.remote.store(this.files);
    return Promise.resolve(this.headCommit);
  }
}

function sameFiles(a: Files | undefined, b: Files): boolean {
  return a !== undefined && a.size === b.size && [...a].every(([path, content]) => b.get(path) === content);
}
