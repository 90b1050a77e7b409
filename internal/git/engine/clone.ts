// A branch worker's local clone, through the native git CLI (gitexec.ts). Every repository
// operation of a worker goes through here, on the worker's own loop. A checkout found on disk is
// trusted only as a clone closed in order left it (cleanMarker): the worker's first cycle fetches
// and resets, unless that close found the worktree and index exactly its last commit and the
// remote still shows that commit. After that the worker decides when
// to fetch (its base trust); the clone only does what it is told, and every push checks first
// that the remote still shows the root the commits were made on, then pushes with that root as
// the lease, so the server's compare-and-swap holds too. The clone is partial (commits and trees;
// a blob when a checked-out file needs it) and sparse: it checks out the folders its worker
// lists and the directories their kustomizations build from (sparsecheckout.ts, told which by
// CloneOptions.buildsFrom), so the rest of a large repository costs neither fetch, checkout nor
// disk.
import * as fs from "node:fs";
import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { runGit, type GitRun } from "./gitexec.ts";
import { CommitStream } from "./commitstream.ts";
import { filesUnder, SparseCheckout, type BuildsFrom } from "./sparsecheckout.ts";
import { readFileAt, stagedFileAt, writeFileAt } from "./worktreefiles.ts";
import { parseAdvertisement } from "./lsremote.ts";
import { rootCommit, rootFrom, rootHolds, type Advertisement, type Root } from "./root.ts";
import { signCommits } from "./commitsigner.ts";
import type { SigningKey } from "../../signing/sshkey.ts";
import type { Signature } from "../../types/signature.ts";
import { withTransport, type RemoteAuth } from "./transport.ts";
import { basicAuthorization } from "../../gitauth/credentials.ts";

export interface CloneOptions {
  dir: string;
  url: string;
  branch: string;
  /** The branch a missing write branch is created from; the remote's default branch when omitted. */
  parentBranch?: string;
  /** HTTP basic auth as a username and password, an http(s) transport, or an SSH key with its known hosts. */
  auth: { username: string; password: string } | RemoteAuth | undefined;
  /** How long one call to the Git server may take: two minutes unless a test shortens it. */
  callTimeoutMs?: number;
  /** GitProvider.spec.commit.signing: every commit pushed is signed with it. */
  signingKey?: SigningKey;
  /**
   * What a checked-out file builds from outside its folder, checked out with it: the operator
   * passes internal/manifest's kustomizationReferences. Without it, only the listed folders.
   */
  buildsFrom?: BuildsFrom;
  /** GitBranch spec.push: where the push goes instead of the branch, and the push options it sends. */
  push?: PushSettings;
}

/**
 * How a branch is pushed for review before merge, with no forge API: push options (`git push
 * -o`, such as GitLab's merge_request.create) sent with every push, and a review ref (Gerrit's
 * refs/for/<branch>, Gitea's and Forgejo's AGit refs/for/<branch>/<topic>) pushed instead of
 * the branch, which is then only fetched, never written.
 */
export interface PushSettings {
  refspec?: string;
  options?: readonly string[];
}

/** Why a push did not land: the remote no longer shows the root the commits were made on. */
export class RemoteMovedError extends Error {}

/** What a branch worker needs of its repository; the clone is the real one. */
export interface Repository {
  readonly headCommit: string | undefined;
  /** The branch it writes (or, with a review ref, fetches and commits on). */
  readonly branch: string;
  /** The review ref it pushes to instead of the branch; undefined: it pushes the branch. */
  readonly reviewRef?: string;
  /** Reads the remote's refs: one ref advertisement. */
  advertise(): Promise<Advertisement>;
  /** Fetches where the branch starts and resets the worktree there, discarding everything else. */
  fetchAndReset(advertisement?: Advertisement): Promise<Root>;
  /** Pushes the branch (or its review ref) without force, after checking the remote still shows `root`. */
  push(root: Root): Promise<string>;
  /** Whether one advertisement still shows `root`: the branch (or its parent) where it was. */
  holds(root: Root): Promise<boolean>;
  /** The commits on `to`'s first-parent line after `from` (none: every one), oldest first. */
  firstParents(from: string | undefined, to: string): Promise<string[]>;
  /** Bounds every remote call until the next call to this: a publication cycle's deadline. */
  setCycleDeadline(signal: AbortSignal | undefined): void;
  /** Removes the local clone after a local fault: the next fetchAndReset clones afresh. */
  discard(): Promise<void>;
  /** Puts every local commit into the repository and stops the clone's processes: the worker stops. */
  close(): Promise<void>;
  /** Waits until every commit sent is made, and the head is the last of them. */
  settle(): Promise<void>;
}

/**
 * Where a clone closed in order names the commit its worktree and index were exactly, nothing
 * untracked beside them: the next clone on the directory takes it once, and trusts the checkout
 * without a reset when the remote still shows that commit. Beside the saved inventories, in .git,
 * which no reset or clean touches; a process that dies without closing leaves none.
 */
const cleanMarker = (dir: string) => join(dir, ".git", "gitops-reverser", "clean-at");

/** How many importer streams end between two checks of git's own housekeeping (`gc --auto`). */
const importsPerHousekeeping = 25;

/**
 * The maintenance git starts by itself after every fetch, another process each time (the lazy
 * fetches a partial clone makes for the blobs it checks out included, which inherit `-c`), is
 * off: the clone's own `gc --auto`, every importsPerHousekeeping streams, is its housekeeping.
 */
const noAutoMaintenance = ["-c", "maintenance.auto=false"];

/**
 * Git's housekeeping runs in the foreground, when the clone asks: a detached gc would outlive
 * the call and could repack under a running importer.
 */
const foregroundHousekeeping = [
  "-c",
  "gc.autoDetach=false",
  "-c",
  "maintenance.autoDetach=false",
  ...noAutoMaintenance,
];

export class Clone implements Repository {
  /** The commit the worktree is at: the root, or the last local commit on top of it. */
  private head: string | undefined;
  /** The head's tree, once known: a commit compares the index's tree with it. */
  private headTree: string | undefined;
  private cycle: AbortSignal | undefined;
  private readonly auth: RemoteAuth | undefined;
  /** The commits in flight, to the importer that runs from the first commit after any other git call to that call. */
  private readonly stream: CommitStream;
  private imports = 0;
  /** Paths the importer committed that the index does not show yet: staged when it ends. */
  private readonly unstaged = new Set<string>();
  private readonly sparse: SparseCheckout;

  constructor(private readonly options: CloneOptions) {
    const auth = options.auth;
    this.auth =
      auth === undefined || "kind" in auth
        ? auth
        : { kind: "http", authorization: basicAuthorization(auth.username, auth.password) };
    this.stream = new CommitStream(options.dir, {
      at: () => ({ commit: this.head, tree: this.headTree }),
      moved: (commit, tree, paths) => {
        this.head = commit;
        this.headTree = tree;
        for (const path of paths) this.unstaged.add(path);
      },
      known: (tree) => (this.headTree = tree),
    });
    this.sparse = new SparseCheckout(
      options.dir,
      {
        local: (args) => this.git(args),
        lazy: (args) => this.lazy(args),
      },
      options.buildsFrom ?? (() => []),
    );
  }

  get dir(): string {
    return this.options.dir;
  }

  get headCommit(): string | undefined {
    return this.head;
  }

  get branch(): string {
    return this.options.branch;
  }

  get reviewRef(): string | undefined {
    return this.options.push?.refspec;
  }

  setCycleDeadline(signal: AbortSignal | undefined): void {
    this.cycle = signal;
  }

  /** A local git call in the worktree, once the importer's objects are in the repository. */
  private async git(args: string[], run: GitRun = {}) {
    await this.endImport();
    return runGit(args, { cwd: this.dir, ...run });
  }

  /** Ends the importer, so its commits are in the repository for the next git call. */
  private async endImport(): Promise<void> {
    if (!(await this.stream.end())) return;
    // The index follows the head, one call per stream: a reset then rewrites only what differs
    // from its target, as it did when each commit staged its paths, not the whole folder.
    if (this.unstaged.size > 0) {
      const input = `${[...this.unstaged].join("\0")}\0`;
      this.unstaged.clear();
      await runGit(["update-index", "--add", "--remove", "-z", "--stdin"], { cwd: this.dir, input });
    }
    if (++this.imports % importsPerHousekeeping === 0) {
      await runGit([...foregroundHousekeeping, "gc", "--auto", "--quiet"], { cwd: this.dir });
    }
  }

  /**
   * A local git call that may fetch what a partial clone left out (the blobs of files it checks
   * out): with the transport, and its failures the remote's unless git names the clone.
   */
  private async lazy(args: string[]) {
    await this.endImport();
    return this.remote([...noAutoMaintenance, ...args], this.dir);
  }

  /** A git call that talks to the remote: with the transport, bounded by its deadlines. */
  private remote(args: string[], cwd?: string) {
    const deadlines = [AbortSignal.timeout(this.options.callTimeoutMs ?? 2 * 60_000), this.cycle];
    const signal = AbortSignal.any(deadlines.filter((s): s is AbortSignal => s !== undefined));
    return withTransport(this.auth, (env) => runGit(args, { cwd, env, signal, remote: true }));
  }

  async advertise(): Promise<Advertisement> {
    const { stdout } = await this.remote(["ls-remote", "--symref", this.options.url]);
    return parseAdvertisement(stdout.toString("utf8"));
  }

  /**
   * Fetches the branch, or while it does not exist its parent, and resets the worktree to that
   * tip, discarding local commits, untracked files and the directories they were in.
   */
  async fetchAndReset(advertisement?: Advertisement): Promise<Root> {
    const { dir, url, branch, parentBranch } = this.options;
    await mkdir(dir, { recursive: true });
    if (!fs.existsSync(join(dir, ".git"))) {
      await this.git(["init", "-q", `--initial-branch=${branch}`]);
      // Nothing but the repository's top-level files until a folder is listed (include()).
      await this.git(["sparse-checkout", "set", "--cone", "--sparse-index"]);
    }
    await this.git(["config", "remote.origin.url", url]);
    const closedClean = await this.takeCleanMarker();
    const root = rootFrom(advertisement ?? (await this.advertise()), branch, parentBranch);
    // Its own last push, left as the last close found it: the checkout is the tip already.
    if (root.from === "branch" && root.commit === closedClean && (await this.headIs(root.commit))) {
      this.unstaged.clear();
      this.head = root.commit;
      this.headTree = undefined;
      return root;
    }
    // A tip the clone already holds (its own last push, found again after a restart) needs no
    // fetch: the reset alone makes the checkout trustworthy.
    if (root.from !== "empty" && !(await this.holdsCommit(root.commit))) {
      const ref = root.from === "branch" ? branch : root.parent;
      await this.remote(
        [
          ...foregroundHousekeeping,
          "fetch",
          "-q",
          "--no-tags",
          "--no-write-fetch-head",
          // Commits and trees only: a blob is fetched when a checked-out file needs it.
          "--filter=blob:none",
          "origin",
          `+refs/heads/${ref}:refs/remotes/origin/${ref}`,
        ],
        dir,
      );
    }
    await this.resetTo(root.from === "empty" ? undefined : root.commit);
    return root;
  }

  /**
   * Whether the repository holds a commit. rev-list with --missing asks without the lazy fetch
   * a partial clone makes for an object it lacks (cat-file would fetch it).
   */
  private async holdsCommit(commit: string): Promise<boolean> {
    try {
      await this.git(["rev-list", "--missing=print", "--no-walk", commit]);
      return true;
    } catch {
      return false;
    }
  }

  async discard(): Promise<void> {
    this.unstaged.clear();
    await this.stream.kill();
    await rm(this.options.dir, { recursive: true, force: true });
    this.head = undefined;
    this.headTree = undefined;
  }

  /**
   * Puts every commit into the repository, and leaves the clean marker when the worktree and the
   * index are exactly the last commit: the branch is moved there first (a commit moves no local
   * ref), so git status compares both with it, untracked and ignored files included.
   */
  async close(): Promise<void> {
    await this.endImport();
    const head = this.head;
    if (!head) return;
    try {
      await this.git(["update-ref", `refs/heads/${this.options.branch}`, head]);
      const { stdout } = await this.git(["status", "--porcelain", "--untracked-files=all", "--ignored"]);
      if (stdout.length > 0) return;
      await mkdir(dirname(cleanMarker(this.dir)), { recursive: true });
      await writeFile(cleanMarker(this.dir), head);
    } catch {
      // Not proved clean: the next clone resets, as after a crash.
    }
  }

  /** The commit the last close left the checkout clean at, if it did; taken once, so a crash after this start leaves none. */
  private async takeCleanMarker(): Promise<string | undefined> {
    const marker = cleanMarker(this.dir);
    const commit = await readFile(marker, "utf8").then(
      (text) => text.trim(),
      () => undefined,
    );
    if (commit !== undefined) await rm(marker, { force: true });
    return commit;
  }

  /** Whether HEAD is `commit`, the checkout's branch named by HEAD. */
  private async headIs(commit: string): Promise<boolean> {
    const { stdout } = await this.git(["rev-parse", "--verify", "-q", "HEAD"]).catch(() => ({
      stdout: Buffer.alloc(0),
    }));
    return stdout.toString("utf8").trim() === commit;
  }

  private async resetTo(tip: string | undefined): Promise<void> {
    const { dir, branch } = this.options;
    // The reset replaces the head these paths were committed on: staging them would be undone.
    this.unstaged.clear();
    // HEAD names the write branch whether or not it has a commit yet.
    await this.git(["symbolic-ref", "HEAD", `refs/heads/${branch}`]);
    if (tip) {
      await this.lazy(["reset", "-q", "--hard", tip]);
      await this.git(["clean", "-q", "-ffdx"]);
      // A commit fetched may make a kustomization build from a directory not checked out yet.
      await this.sparse.followReferences();
    } else {
      // An empty branch: no commit yet, no index, no files.
      await this.git(["update-ref", "-d", `refs/heads/${branch}`]);
      await rm(join(dir, ".git", "index"), { force: true });
      for (const entry of await readdir(dir)) {
        if (entry !== ".git") await rm(join(dir, entry), { recursive: true, force: true });
      }
    }
    this.head = tip;
    this.headTree = undefined;
  }

  /** The files under `folder` that differ between two commits, by git's tree walk. */
  async changedPaths(from: string, to: string, folder: string): Promise<string[]> {
    const scope = folder === "." || folder === "" ? [] : ["--", folder];
    const { stdout } = await this.git(["diff", "--name-only", "--no-renames", "-z", from, to, ...scope]);
    return stdout
      .toString("utf8")
      .split("\0")
      .filter((p) => p !== "");
  }

  /**
   * The commits since `base` up to the worktree's commit that touch `folder` and that a committer
   * other than `committer` (an email) made, oldest first, with the files under `folder` each
   * changed: what was pushed beside the operator. Undefined when `base` is not an ancestor here
   * (a force-push rewrote it, or it is unknown), so nothing can be said of what changed since.
   */
  async pushedSince(
    base: string,
    folder: string,
    committer: string,
  ): Promise<{ commit: string; paths: string[] }[] | undefined> {
    const head = this.headCommit;
    if (!head) return undefined;
    const ancestor = await this.git(["merge-base", "--is-ancestor", base, head]).then(
      () => true,
      () => false,
    );
    if (!ancestor) return undefined;
    const scope = folder === "." || folder === "" ? [] : ["--", folder];
    const { stdout } = await this.git([
      "log",
      "--reverse",
      "--format=%H%x09%ce",
      `${base}..${head}`,
      ...scope,
    ]);
    const foreign = stdout
      .toString("utf8")
      .split("\n")
      .map((line) => line.split("\t"))
      .filter(([commit, email]) => commit && email !== committer)
      .map(([commit]) => commit!);
    const pushed: { commit: string; paths: string[] }[] = [];
    for (const commit of foreign) {
      const changed = await this.git([
        "diff-tree",
        "--no-commit-id",
        "--name-only",
        "--no-renames",
        "-r",
        "-z",
        commit,
        ...scope,
      ]);
      pushed.push({
        commit,
        paths: changed.stdout
          .toString("utf8")
          .split("\0")
          .filter((p) => p !== ""),
      });
    }
    return pushed;
  }

  /** A file as it was at `commit`; undefined where it did not exist. */
  async readAt(commit: string, path: string): Promise<string | undefined> {
    // A partial clone fetches the blob it left out, so with the transport.
    const listed = await this.lazy(["ls-tree", "-z", commit, "--", path]).catch(() => undefined);
    const blob = listed?.stdout
      .toString("utf8")
      .split("\0")[0]
      ?.match(/^\d+ blob ([0-9a-f]+)\t/)?.[1];
    if (!blob) return undefined;
    const { stdout } = await this.lazy(["cat-file", "blob", blob]);
    return stdout.toString("utf8");
  }

  // Synchronously: worktreefiles.ts says why.
  read(path: string): Promise<string | undefined> {
    return Promise.resolve(readFileAt(this.dir, path));
  }

  write(path: string, content: string): Promise<void> {
    writeFileAt(this.dir, path, content);
    return Promise.resolve();
  }

  remove(path: string): Promise<void> {
    fs.rmSync(join(this.dir, path), { force: true });
    return Promise.resolve();
  }

  exists(path: string): boolean {
    return fs.existsSync(join(this.dir, path));
  }

  /** Every file under `folder` ("" for the root), relative to the repository root. */
  async list(folder: string): Promise<string[]> {
    await this.sparse.include(folder);
    return filesUnder(this.dir, folder);
  }

  /**
   * Commits `paths` (written or removed) on top of the head; returns the new commit, or
   * undefined when they change nothing. The commit goes through the clone's importer, so it
   * forks no process; the index is brought to the head when the importer ends (one call for the
   * stream), and no local ref is moved: the push names the commit, and a reset moves the branch.
   */
  async commit(
    paths: Iterable<string>,
    message: string,
    author: Signature,
    committer: Signature,
    allowEmpty = false,
  ) {
    let made: string | undefined;
    this.send(paths, message, author, committer, (commit) => (made = commit), allowEmpty);
    await this.settle();
    return made;
  }

  /**
   * commit(), without waiting for it: the touched files are read now, and `committed` hears the
   * new commit (undefined: it changed nothing, unless `allowEmpty`) once it is answered and the
   * head has moved. Every
   * other call of the clone waits for it; settle() waits for it alone.
   */
  send(
    paths: Iterable<string>,
    message: string,
    author: Signature,
    committer: Signature,
    committed: (commit: string | undefined) => void,
    allowEmpty = false,
  ): void {
    const touched = [...new Set(paths)];
    const when = Math.floor(Date.now() / 1000);
    const files = touched.map((path) => stagedFileAt(this.dir, path));
    this.stream.send({ paths: touched, files, message, author, committer, when, allowEmpty }, committed);
  }

  /** Waits until every commit sent is answered, and the head is the last of them. */
  settle(): Promise<void> {
    return this.stream.settle();
  }

  async firstParents(from: string | undefined, to: string): Promise<string[]> {
    const range = from ? [`${from}..${to}`] : [to];
    const { stdout } = await this.git(["rev-list", "--first-parent", "--reverse", ...range]);
    return stdout
      .toString("utf8")
      .split("\n")
      .filter((line) => line !== "");
  }

  /** Whether one advertisement still shows `root`: the branch (or its parent) where it was. */
  async holds(root: Root): Promise<boolean> {
    return rootHolds(await this.advertise(), this.options.branch, root);
  }

  /**
   * Pushes the branch without force. The push leases the branch at the root the commits were
   * made on (absent, when it is created), so a remote that moved, or a push racing ours, makes
   * git or the server refuse it. A branch being created from its parent is checked first with
   * one advertisement, since the lease cannot see the parent move. A moved remote, and a push
   * the server refuses, is a RemoteMovedError: fetch, reset and replay.
   *
   * With a review ref (GitBranch spec.push.refspec) the commits go to that ref and the branch
   * is not written. No lease can guard a ref the host takes as a request (refs/for/main is never
   * stored under that name), so what is guarded is the branch the commits were made on: one
   * advertisement must still show it where the cycle's root was made, else RemoteMovedError,
   * and the writes are replayed on its new tip. The host refusing the review push is not a
   * moved branch but a failure, with the host's reason. Push options go with either push.
   */
  async push(root: Root): Promise<string> {
    const { dir, branch } = this.options;
    const review = this.reviewRef;
    if ((review !== undefined || root.from !== "branch") && !(await this.holds(root))) {
      throw new RemoteMovedError(`the remote branch ${branch} is no longer where this cycle's commits start`);
    }
    if (!this.head) throw new RemoteMovedError(`nothing was committed on ${branch} to push`);
    await this.endImport();
    // Signed as they leave: the next commit is made on the signed head, with the same tree.
    if (this.options.signingKey)
      this.head = await signCommits(dir, rootCommit(root), this.head, this.options.signingKey);
    const head = this.head;
    const options = (this.options.push?.options ?? []).map((option) => `--push-option=${option}`);
    const ref = review ?? `refs/heads/${branch}`;
    const lease =
      review === undefined ? [`--force-with-lease=${ref}:${root.from === "branch" ? root.commit : ""}`] : [];
    try {
      await this.remote(["push", "--porcelain", ...options, ...lease, "origin", `${head}:${ref}`], dir);
    } catch (err) {
      const out = err instanceof Error && "stdout" in err ? String(err.stdout) : "";
      if (/^!\t/m.test(out)) {
        const line = out.split("\n").find((l) => l.startsWith("!\t")) ?? "";
        const why = line.split("\t").slice(2).join(" ");
        if (review !== undefined)
          throw new Error(`the remote refused the push to ${review}: ${why}`, { cause: err });
        throw new RemoteMovedError(`the remote branch ${branch} moved: ${why}`);
      }
      throw err;
    }
    return head;
  }
}
