// One long-lived `git fast-import` per clone: a commit is a few lines on its stdin and two
// answers on its stdout, not three processes. Each process is forked from the operator, whose
// fork cost grows with its memory, so a commit per change (idleTimeout 0s) was bounded by forks.
// The importer's objects reach the repository only when it ends, so the clone ends it before
// any other git call; the next commit starts a new one.
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { once } from "node:events";
import {
  largeFolderFiles,
  largeFolders,
  mergedEntries,
  mktreeInput,
  parseTreeListing,
  type FolderChange,
  type ObjectFormat,
  type TreeEntry,
} from "./foldertree.ts";
import { GitCommandError, gitEnv, runGit } from "./gitexec.ts";
import {
  blobCommand,
  commitCommand,
  listedTree,
  quotePath,
  treeOfListing,
  type ImportedCommit,
} from "./importstream.ts";

/** The ref the importer moves: private to the operator, so no branch moves before a reset. */
const importRef = "refs/gitops-reverser/import";

/** The tree of no files: what an importer lists for the root of an empty commit. */
export const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/** The most bytes one write to fast-import's stdin joins. */
const writeBytes = 1 << 20;

type Waiter = { resolve: (line: string) => void; reject: (err: Error) => void };

export class Importer {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly waiting: Waiter[] = [];
  private buffered = "";
  private stderr = "";
  private failure: Error | undefined;
  private marks = 0;
  /** The commits this stream made, by hash: fast-import reads its own only by their marks. */
  private readonly made = new Map<string, number>();
  private queue: Promise<unknown> = Promise.resolve();
  private readonly exited: Promise<number | null>;
  private objectFormat: Promise<ObjectFormat> | undefined;

  /**
   * `largeFolder`: the fewest files one commit writes into one folder for the importer to build
   * that folder's tree itself (foldertree.ts); a test sets it to compare both ways.
   */
  constructor(
    private readonly dir: string,
    private readonly largeFolder = largeFolderFiles,
  ) {
    // --force: the import ref follows whatever the clone committed on last, fast-forward or not.
    // Zlib's fastest level: each commit writes its folder's tree anew, and deflating a tree of
    // 1,000 entries at git's default level was most of a commit's cost (1.7 ms a commit, 0.55
    // at level 1). The stream's pack is the clone's own; gc --auto repacks it at git's level.
    const args = ["-c", "pack.compression=1", "fast-import", "--quiet", "--force", "--date-format=raw"];
    this.child = spawn("git", args, {
      cwd: dir,
      env: gitEnv(),
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.child.stdout.setEncoding("utf8");
    this.child.stdout.on("data", (chunk: string) => this.answer(chunk));
    this.child.stderr.on("data", (b: Buffer) => (this.stderr += b.toString("utf8")));
    this.child.stdin.on("error", () => undefined);
    this.child.on("error", (err) => this.fail(err));
    this.exited = once(this.child, "close").then(([code]) => {
      this.fail(new GitCommandError("fast-import", code as number | null, this.stderr, "local"));
      return code as number | null;
    });
  }

  /**
   * Sends `commit` on top of its parent: a commit the repository holds, by hash, or one this
   * stream sent, by its mark. Returns its mark at once, and its hash and root tree once
   * fast-import answers: later commits can be sent on it before then.
   */
  commit(commit: Omit<ImportedCommit, "ref" | "mark" | "from"> & { parent: string | number | undefined }): {
    mark: number;
    made: Promise<{ commit: string; tree: string }>;
  } {
    const mark = ++this.marks;
    const from = typeof commit.parent === "number" ? `:${commit.parent}` : this.dataref(commit.parent);
    const imported: ImportedCommit = { ...commit, ref: importRef, mark, from };
    const large = largeFolders(commit.files, this.largeFolder);
    const command = () =>
      large.length === 0 ? commitCommand(imported) : this.withFolderTrees(imported, large);
    const made = this.request(command, 2).then(([listing, hash]) => {
      const tree = listing!.startsWith("missing ") ? emptyTree : treeOfListing(listing!);
      this.made.set(hash!.trim(), mark);
      return { commit: hash!.trim(), tree };
    });
    made.catch(() => undefined);
    return { mark, made };
  }

  /** The root tree of a commit: one the repository holds, or one this stream made. */
  async treeOf(commit: string): Promise<string> {
    const [listing] = await this.request(() => [Buffer.from(`ls ${this.dataref(commit)} ""\n`)], 1);
    return treeOfListing(listing!);
  }

  /**
   * Sends a command after those sent before it, and reads its `count` answer lines. The next
   * command is sent once this one is written, not once it is answered: answers come in order.
   * `command` is built in turn, so it may ask fast-import about the commits sent before it.
   */
  private async request(command: () => Buffer[] | Promise<Buffer[]>, count: number): Promise<string[]> {
    const sent = this.serialized(async () => {
      const chunks = await command();
      const answers = this.answers(count);
      await this.send(chunks);
      // Wrapped, so the queue moves on once the command is written.
      return { answers };
    });
    return (await sent).answers;
  }

  /**
   * The commit with each large folder's tree built here (foldertree.ts): the folder's entries
   * at the parent merged with the commit's files in it, written by `git mktree`, the new files
   * sent as blobs before the commit names the tree. Runs in the importer's turn.
   */
  private async withFolderTrees(commit: ImportedCommit, large: FolderChange[]): Promise<Buffer[]> {
    const format = await (this.objectFormat ??= this.readObjectFormat());
    const inFolders = new Set(large.flatMap((folder) => folder.files));
    const blobs: Buffer[] = [];
    const folders: { path: string; tree: string | undefined }[] = [];
    for (const folder of large) {
      const parent = commit.from === undefined ? [] : await this.entriesAt(commit.from, folder.path);
      const entries = mergedEntries(parent, folder, format);
      folders.push({
        path: folder.path,
        tree: entries.length === 0 ? undefined : await this.mktree(entries),
      });
      for (const file of folder.files) if (!("deleted" in file)) blobs.push(...blobCommand(file.content));
    }
    const files = commit.files.filter((file) => !inFolders.has(file));
    return [...blobs, ...commitCommand({ ...commit, files, folders })];
  }

  /**
   * A folder's entries in a commit, by `ls` to fast-import and `git ls-tree` of the tree it
   * names. A tree this stream made is only in its memory: a checkpoint writes it out first.
   */
  private async entriesAt(from: string, folder: string): Promise<TreeEntry[]> {
    const ls = Buffer.from(`ls ${from} ${quotePath(folder)}\n`);
    const tree = listedTree((await this.ask([ls]))!);
    if (tree === undefined) return [];
    const listing = () => runGit(["ls-tree", "-z", tree], { cwd: this.dir });
    const listed = await listing().catch(async () => {
      // The same ls, answered once the checkpoint is done: fast-import runs its commands in order.
      await this.ask([Buffer.from("checkpoint\n"), ls]);
      return listing();
    });
    return parseTreeListing(listed.stdout);
  }

  /** Sends a query in the importer's turn (the caller holds it) and reads its one answer. */
  private async ask(chunks: Buffer[]): Promise<string | undefined> {
    const answers = this.answers(1);
    await this.send(chunks);
    return (await answers)[0];
  }

  private async mktree(entries: TreeEntry[]): Promise<string> {
    const made = await runGit(["mktree", "-z", "--missing"], { cwd: this.dir, input: mktreeInput(entries) });
    return made.stdout.toString("utf8").trim();
  }

  private async readObjectFormat(): Promise<ObjectFormat> {
    const { stdout } = await runGit(["rev-parse", "--show-object-format"], { cwd: this.dir });
    return stdout.toString("utf8").trim() === "sha256" ? "sha256" : "sha1";
  }

  private dataref(commit: string | undefined): string | undefined {
    const mark = commit === undefined ? undefined : this.made.get(commit);
    return mark === undefined ? commit : `:${mark}`;
  }

  /** Ends the stream: fast-import writes its objects and the import ref, then exits. */
  async end(): Promise<void> {
    await this.queue.catch(() => undefined);
    this.child.stdin.end();
    // Its exit set the failure every later call gets: git's own message, when it did not end well.
    if ((await this.exited) !== 0) throw this.failure!;
  }

  /** Stops it without writing anything: its commits are being thrown away. */
  async kill(): Promise<void> {
    this.child.kill("SIGKILL");
    await this.exited;
  }

  private serialized<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.then(work, work);
    this.queue = next.catch(() => undefined);
    return next;
  }

  // A command's many small pieces go in one write of up to a MiB: each write is a system call
  // on the loop's thread, and a commit of one file is a dozen pieces.
  private async send(chunks: Buffer[]): Promise<void> {
    for (let i = 0; i < chunks.length;) {
      const batch: Buffer[] = [];
      let bytes = 0;
      while (i < chunks.length && (batch.length === 0 || bytes + chunks[i]!.length <= writeBytes)) {
        bytes += chunks[i]!.length;
        batch.push(chunks[i++]!);
      }
      if (this.failure) throw this.failure;
      if (!this.child.stdin.write(batch.length === 1 ? batch[0]! : Buffer.concat(batch, bytes))) {
        await Promise.race([this.drained(), this.exited]);
      }
    }
  }

  /**
   * Until stdin takes more. A write that failed (EPIPE: fast-import exited before Node heard it)
   * waits for the exit instead: git's own message is the failure, and it is the local clone's.
   * The pipe's EPIPE names no file, so on its own it would read as a dropped connection, the
   * remote's fault, and the broken clone would wait out the outage schedule before its reset.
   */
  private drained(): Promise<unknown> {
    return once(this.child.stdin, "drain").catch(() => this.exited);
  }

  /**
   * The next `count` lines fast-import answers, awaited once the command is sent. When the
   * send fails, the same failure rejects these; it is reported by the send.
   */
  private answers(count: number): Promise<string[]> {
    const lines = Array.from({ length: count }, () =>
      this.failure
        ? Promise.reject(this.failure)
        : new Promise<string>((resolve, reject) => this.waiting.push({ resolve, reject })),
    );
    const all = Promise.all(lines);
    all.catch(() => undefined);
    return all;
  }

  private answer(chunk: string): void {
    this.buffered += chunk;
    let newline: number;
    while ((newline = this.buffered.indexOf("\n")) >= 0) {
      const line = this.buffered.slice(0, newline);
      this.buffered = this.buffered.slice(newline + 1);
      this.waiting.shift()?.resolve(line);
    }
  }

  private fail(err: Error): void {
    this.failure ??= err;
    for (const waiter of this.waiting.splice(0)) waiter.reject(this.failure);
  }
}
