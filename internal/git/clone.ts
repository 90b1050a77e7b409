// A branch worker's local clone, through isomorphic-git. Every repository operation of a worker
// goes through here, on the worker's own loop. A checkout found on disk is never trusted: the
// worker's first cycle fetches and resets. After that the worker decides when to fetch (its base
// trust); the clone only does what it is told, and every push checks first that the remote still
// shows the root the commits were made on.
import * as fs from "node:fs";
import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import * as git from "isomorphic-git";
import { boundedHttp, type BoundedHttp } from "./bounded.ts";
import { rootFrom, rootHolds, type Advertisement, type Root } from "./root.ts";

export interface Signature {
  name: string;
  email: string;
}

export interface CloneOptions {
  dir: string;
  url: string;
  branch: string;
  /** The branch a missing write branch is created from; the remote's default branch when omitted. */
  parentBranch?: string;
  auth: { username: string; password: string } | undefined;
  /** How long one call to the Git server may take: two minutes unless a test shortens it. */
  callTimeoutMs?: number;
}

/** Why a push did not land: the remote no longer shows the root the commits were made on. */
export class RemoteMovedError extends Error {}

/** What a branch worker needs of its repository; the clone is the real one. */
export interface Repository {
  readonly headCommit: string | undefined;
  /** Reads the remote's refs: one ref advertisement. */
  advertise(): Promise<Advertisement>;
  /** Fetches where the branch starts and resets the worktree there, discarding everything else. */
  fetchAndReset(advertisement?: Advertisement): Promise<Root>;
  /** Pushes the branch without force, after checking the remote still shows `root`. */
  push(root: Root): Promise<string>;
  /** Whether one advertisement still shows `root`: the branch (or its parent) where it was. */
  holds(root: Root): Promise<boolean>;
  /** Bounds every remote call until the next call to this: a publication cycle's deadline. */
  setCycleDeadline(signal: AbortSignal | undefined): void;
  /** Removes the local clone after a local fault: the next fetchAndReset clones afresh. */
  discard(): Promise<void>;
}

export class Clone implements Repository {
  /** The commit the worktree is at: the root, or the last local commit on top of it. */
  private head: string | undefined;
  private readonly http: BoundedHttp;

  constructor(private readonly options: CloneOptions) {
    this.http = boundedHttp(options.callTimeoutMs ?? 2 * 60_000);
  }

  get dir(): string {
    return this.options.dir;
  }

  private get onAuth() {
    const auth = this.options.auth;
    return auth ? () => auth : undefined;
  }

  get headCommit(): string | undefined {
    return this.head;
  }

  setCycleDeadline(signal: AbortSignal | undefined): void {
    this.http.setCycleDeadline(signal);
  }

  async advertise(): Promise<Advertisement> {
    const info = await git.getRemoteInfo2({
      http: this.http,
      url: this.options.url,
      onAuth: this.onAuth,
      protocolVersion: 1,
    });
    const refs = new Map((info.refs ?? []).filter((r) => r.ref !== "HEAD").map((r) => [r.ref, r.oid]));
    return { refs, head: info.refs?.find((r) => r.ref === "HEAD")?.target };
  }

  /**
   * Fetches the branch, or while it does not exist its parent, and resets the worktree to that
   * tip, discarding local commits, untracked files and the directories they were in.
   */
  async fetchAndReset(advertisement?: Advertisement): Promise<Root> {
    const { dir, url, branch, parentBranch } = this.options;
    await mkdir(dir, { recursive: true });
    if (!fs.existsSync(join(dir, ".git"))) {
      await git.init({ fs, dir, defaultBranch: branch });
    }
    await git.setConfig({ fs, dir, path: "remote.origin.url", value: url });
    await git.setConfig({
      fs,
      dir,
      path: "remote.origin.fetch",
      value: "+refs/heads/*:refs/remotes/origin/*",
    });
    const root = rootFrom(advertisement ?? (await this.advertise()), branch, parentBranch);
    if (root.from !== "empty") {
      const ref = root.from === "branch" ? branch : root.parent;
      await git.fetch({
        fs,
        http: this.http,
        dir,
        url,
        ref,
        singleBranch: true,
        tags: false,
        onAuth: this.onAuth,
      });
    }
    await this.resetTo(root.from === "empty" ? undefined : root.commit);
    return root;
  }

  async discard(): Promise<void> {
    await rm(this.options.dir, { recursive: true, force: true });
    this.head = undefined;
  }

  private async resetTo(tip: string | undefined): Promise<void> {
    const { dir, branch } = this.options;
    for (const entry of await readdir(dir)) {
      if (entry !== ".git") await rm(join(dir, entry), { recursive: true, force: true });
    }
    // HEAD names the write branch whether or not it has a commit yet.
    await git.writeRef({ fs, dir, ref: "HEAD", value: `refs/heads/${branch}`, symbolic: true, force: true });
    if (tip) {
      await git.writeRef({ fs, dir, ref: `refs/heads/${branch}`, value: tip, force: true });
      await git.checkout({ fs, dir, ref: branch, force: true });
    } else {
      // An empty branch: no commit yet, and the index is emptied.
      await rm(join(dir, ".git", `refs/heads/${branch}`), { force: true });
      await rm(join(dir, ".git", "index"), { force: true });
    }
    this.head = tip;
  }

  /**
   * The files under `folder` that differ between two commits. Subtrees whose hashes are equal
   * are not descended into, so the cost follows the size of the change, not of the folder.
   */
  async changedPaths(from: string, to: string, folder: string): Promise<string[]> {
    const scope = folder === "." ? "" : folder;
    const changed: string[] = [];
    await git.walk({
      fs,
      dir: this.dir,
      trees: [git.TREE({ ref: from }), git.TREE({ ref: to })],
      map: async (path, [before, after]) => {
        if (path === ".") return true;
        const inside = scope === "" || path === scope || path.startsWith(`${scope}/`);
        if (!inside && !scope.startsWith(`${path}/`)) return null;
        const [a, b] = await Promise.all([before?.oid(), after?.oid()]);
        if (a === b) return null;
        const types = await Promise.all([before?.type(), after?.type()]);
        if (inside && types.includes("blob")) changed.push(path);
        return types.includes("tree") ? true : null;
      },
    });
    return changed;
  }

  async read(path: string): Promise<string | undefined> {
    try {
      return await readFile(join(this.dir, path), "utf8");
    } catch {
      return undefined;
    }
  }

  async write(path: string, content: string): Promise<void> {
    await mkdir(dirname(join(this.dir, path)), { recursive: true });
    await writeFile(join(this.dir, path), content);
  }

  async remove(path: string): Promise<void> {
    await rm(join(this.dir, path), { force: true });
  }

  exists(path: string): boolean {
    return fs.existsSync(join(this.dir, path));
  }

  /** Every file under `folder` ("" for the root), relative to the repository root. */
  async list(folder: string): Promise<string[]> {
    const root = join(this.dir, folder);
    if (!fs.existsSync(root)) return [];
    const entries = await readdir(root, { recursive: true, withFileTypes: true });
    return entries
      .filter((e) => e.isFile())
      .map((e) => relative(this.dir, join(e.parentPath, e.name)))
      .filter((p) => !p.startsWith(".git/") && p !== ".git");
  }

  /**
   * Stages `paths` (written or removed) and commits them; returns the new commit, or undefined
   * when they change nothing.
   */
  async commit(
    paths: Iterable<string>,
    message: string,
    author: Signature,
    committer: Signature,
  ): Promise<string | undefined> {
    const dir = this.dir;
    const touched = [...new Set(paths)];
    const present = touched.filter((p) => fs.existsSync(join(dir, p)));
    const presentSet = new Set(present);
    // One add for every written path: isomorphic-git rewrites the index on each call.
    if (present.length > 0) await git.add({ fs, dir, filepath: present });
    for (const filepath of touched.filter((p) => !presentSet.has(p))) await git.remove({ fs, dir, filepath });
    // One walk over the touched paths tells whether the staged tree differs from HEAD's.
    const rows = await git.statusMatrix({ fs, dir, filepaths: touched });
    const changed = rows.some(([, head, , stage]) => head !== stage);
    if (!changed) return undefined;
    const now = Math.floor(Date.now() / 1000);
    this.head = await git.commit({
      fs,
      dir,
      message,
      author: { ...author, timestamp: now, timezoneOffset: 0 },
      committer: { ...committer, timestamp: now, timezoneOffset: 0 },
    });
    return this.head;
  }

  /**
   * Pushes the branch without force, after one advertisement shows the remote still where the
   * commits were made: the branch at the root, or while it is absent its parent. Anything else,
   * and a push the server refuses, is a RemoteMovedError: fetch, reset and replay.
   */
  async holds(root: Root): Promise<boolean> {
    return rootHolds(await this.advertise(), this.options.branch, root);
  }

  async push(root: Root): Promise<string> {
    const { dir, url, branch } = this.options;
    if (!(await this.holds(root))) {
      throw new RemoteMovedError(`the remote branch ${branch} is no longer where this cycle's commits start`);
    }
    try {
      await git.push({ fs, http: this.http, dir, url, ref: branch, remoteRef: branch, onAuth: this.onAuth });
    } catch (err) {
      if (err instanceof git.Errors.PushRejectedError || err instanceof git.Errors.GitPushError) {
        throw new RemoteMovedError(`the remote branch ${branch} moved: ${err.message}`);
      }
      throw err;
    }
    return git.resolveRef({ fs, dir, ref: branch });
  }
}
