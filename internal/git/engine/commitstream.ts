// The clone's commits in flight. A commit is sent to the clone's importer as soon as its files
// are written, and the worker goes on to its next write while fast-import works: each answer is
// read in order, in the background, and moves the head. With a commit per change, waiting for
// each answer before the next write was half of a write's time (3.6–6 ms of 8–10 under an edit
// stream), most of it the two processes waiting for each other's turn on a busy machine.
//
// A commit whose tree equals its parent's changed nothing and is dropped, unless it was sent to
// be empty (a CommitRequest's CommitEmpty). The commits sent on it are sent again on the commit
// before it, so no unintended empty commit stays in the history.
import { emptyTree, Importer } from "./importer.ts";
import type { ImportedFile } from "./importstream.ts";
import type { Signature } from "../../types/signature.ts";

/** Where the clone's head is, and what it is told when a commit moves it. */
export interface Head {
  /** The head commit, and its root tree once known. */
  at(): { commit: string | undefined; tree: string | undefined };
  moved(commit: string, tree: string, paths: readonly string[]): void;
  /** The head's tree is first known: read from the importer when no commit gave it. */
  known(tree: string): void;
}

export interface StreamedCommit {
  /** The paths it commits, as the worktree held them when it was sent. */
  paths: readonly string[];
  files: readonly ImportedFile[];
  message: string;
  author: Signature;
  committer: Signature;
  when: number;
  /** Kept though it changes nothing: a CommitRequest's empty commit records its message. */
  allowEmpty?: boolean;
}

interface Pending extends StreamedCommit {
  /** What it was sent on: the head's hash, or the mark of a commit sent before it. */
  parent: string | number | undefined;
  mark: number;
  made: Promise<{ commit: string; tree: string }>;
  committed: (commit: string | undefined) => void;
}

export class CommitStream {
  private importer: Importer | undefined;
  private readonly pending: Pending[] = [];
  private draining: Promise<void> | undefined;
  private failure: Error | undefined;

  constructor(
    private readonly dir: string,
    private readonly head: Head,
  ) {}

  /**
   * Sends a commit on top of the last one sent, or the head. `committed` hears the new commit,
   * or undefined when it changed nothing, once its answer is read and the head has moved.
   */
  send(commit: StreamedCommit, committed: (commit: string | undefined) => void): void {
    const importer = (this.importer ??= new Importer(this.dir));
    const last = this.pending.at(-1);
    const parent = last ? last.mark : this.head.at().commit;
    const { mark, made } = importer.commit({ ...commit, parent });
    this.pending.push({ ...commit, parent, mark, made, committed });
    this.draining ??= this.drain().catch((err: unknown) => {
      this.failure ??= err instanceof Error ? err : new Error(String(err));
    });
  }

  /** Waits until every commit sent is answered; throws what failed, if anything did. */
  async settle(): Promise<void> {
    while (this.draining) await this.draining;
    if (this.failure !== undefined) throw this.failure;
  }

  /** Settles, then ends the importer, so its objects are in the repository: whether one ran. */
  async end(): Promise<boolean> {
    const importer = this.importer;
    if (!importer) return false;
    try {
      await this.settle();
    } catch (err) {
      await this.kill();
      throw err;
    }
    this.importer = undefined;
    await importer.end();
    return true;
  }

  /** Stops the importer without writing anything: what it was sent is thrown away. */
  async kill(): Promise<void> {
    const importer = this.importer;
    this.importer = undefined;
    await importer?.kill();
    await this.draining;
    this.pending.length = 0;
    this.failure = undefined;
  }

  private async drain(): Promise<void> {
    const importer = this.importer!;
    try {
      const head = this.head.at();
      if (head.tree === undefined)
        this.head.known(head.commit ? await importer.treeOf(head.commit) : emptyTree);
      // The last commit kept: what the next one must have been sent on.
      let kept: { commit: string | undefined; mark?: number } = { commit: head.commit };
      while (this.pending.length > 0) {
        const entry = this.pending[0]!;
        if (entry.parent !== kept.commit && entry.parent !== kept.mark) {
          // Sent on a commit that was dropped: sent again, on the one kept before it.
          const again = importer.commit({ ...entry, parent: kept.mark ?? kept.commit });
          entry.mark = again.mark;
          entry.made = again.made;
        }
        const made = await entry.made;
        this.pending.shift();
        if (made.tree === this.head.at().tree && !entry.allowEmpty) {
          entry.committed(undefined);
          continue;
        }
        kept = { commit: made.commit, mark: entry.mark };
        this.head.moved(made.commit, made.tree, entry.paths);
        entry.committed(made.commit);
      }
    } finally {
      this.draining = undefined;
    }
  }
}
