// A branch worker's local clone, through isomorphic-git. Every repository operation of a worker
// goes through here, on the worker's own loop. A checkout found on disk is never trusted: sync()
// fetches, points the branch at the remote tip and discards everything else in the worktree.
import * as fs from "node:fs";
import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import * as git from "isomorphic-git";
import http from "isomorphic-git/http/node";

export interface Signature {
  name: string;
  email: string;
}

export interface CloneOptions {
  dir: string;
  url: string;
  branch: string;
  auth: { username: string; password: string } | undefined;
}

/** Why a push did not land, when the remote refused it. */
export class RemoteMovedError extends Error {}

export class Clone {
  /** The remote tip the worktree was reset to by the last sync; undefined for an empty branch. */
  private base: string | undefined;
  /** The commit the worktree is at: the base, or the last local commit on top of it. */
  private head: string | undefined;

  constructor(private readonly options: CloneOptions) {}

  get dir(): string {
    return this.options.dir;
  }

  private get onAuth() {
    const auth = this.options.auth;
    return auth ? () => auth : undefined;
  }

  /**
   * Fetches the branch and resets the worktree to its tip, discarding local commits and untracked
   * files. A branch the remote does not carry starts from the remote's default branch, or empty.
   */
  async sync(): Promise<void> {
    const { dir, url, branch } = this.options;
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
    const info = await git.getRemoteInfo2({ http, url, onAuth: this.onAuth, protocolVersion: 1 });
    const refs = new Map((info.refs ?? []).map((r) => [r.ref, r.oid]));
    // The remote's default branch, as its HEAD symref names it.
    const head = info.refs?.find((r) => r.ref === "HEAD")?.target;
    const start = refs.has(`refs/heads/${branch}`)
      ? branch
      : head?.startsWith("refs/heads/")
        ? head.slice("refs/heads/".length)
        : undefined;
    let tip: string | undefined;
    if (start) {
      await git.fetch({
        fs,
        http,
        dir,
        url,
        ref: start,
        singleBranch: true,
        tags: false,
        onAuth: this.onAuth,
      });
      tip = refs.get(`refs/heads/${start}`);
    }
    await this.resetTo(tip);
  }

  /** The commit the branch was reset to, which the next push must still find on the remote. */
  get baseCommit(): string | undefined {
    return this.base;
  }

  private async resetTo(tip: string | undefined): Promise<void> {
    const { dir, branch } = this.options;
    for (const entry of await readdir(dir)) {
      if (entry !== ".git") await rm(join(dir, entry), { recursive: true, force: true });
    }
    if (tip) {
      await git.writeRef({ fs, dir, ref: `refs/heads/${branch}`, value: tip, force: true });
      await git.checkout({ fs, dir, ref: branch, force: true });
    } else {
      // An empty branch: HEAD names it, with no commit yet, and the index is emptied.
      await git.writeRef({
        fs,
        dir,
        ref: "HEAD",
        value: `refs/heads/${branch}`,
        symbolic: true,
        force: true,
      });
      await rm(join(dir, ".git", `refs/heads/${branch}`), { force: true });
      await rm(join(dir, ".git", "index"), { force: true });
    }
    this.base = tip;
    this.head = tip;
  }

  get headCommit(): string | undefined {
    return this.head;
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

  /** Pushes the branch without force; a remote that moved is a RemoteMovedError. */
  async push(): Promise<string> {
    const { dir, url, branch } = this.options;
    try {
      await git.push({ fs, http, dir, url, ref: branch, remoteRef: branch, onAuth: this.onAuth });
    } catch (err) {
      if (err instanceof git.Errors.PushRejectedError || err instanceof git.Errors.GitPushError) {
        throw new RemoteMovedError(`the remote branch ${branch} moved: ${err.message}`);
      }
      throw err;
    }
    const tip = await git.resolveRef({ fs, dir, ref: branch });
    this.base = tip;
    return tip;
  }
}
