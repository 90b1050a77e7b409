// When each push landed, to the millisecond, without polling the remote in a tight loop: a
// post-receive hook in the bare repository appends "<epoch ms> <old> <new> <ref>" per updated
// ref, and the benchmark reads that file. Polling would steal CPU from the operator on a
// two-core machine and add its interval to every latency.
import { chmod, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { GitServer } from "../test/support/gitserver.ts";

export interface Push {
  at: number;
  old: string;
  new: string;
  ref: string;
}

const zero = /^0+$/;
/** The empty tree, to diff a first push against. */
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/** Which refs a log keeps: one ref by name, or every ref a pattern matches. */
export type RefFilter = string | RegExp;

export class PushLog {
  private readonly file: string;
  /** Pushes already scanned for tokens. */
  private scanned = 0;
  /** Token (an edit's unique value) to the time of the first push whose diff added it. */
  readonly landed = new Map<string, number>();

  private constructor(
    private readonly git: GitServer,
    private readonly repository: string,
    private readonly ref: RefFilter,
  ) {
    this.file = join(git.repositoryPath(repository), "bench-pushes.log");
  }

  /**
   * Installs the hook in a repository made by `git.createRepository`; the log keeps the pushes
   * of `ref` (`refs/heads/main` unless told), a ref's full name or a pattern of them.
   */
  static async install(
    git: GitServer,
    repository: string,
    options: { ref?: RefFilter } = {},
  ): Promise<PushLog> {
    const log = new PushLog(git, repository, options.ref ?? "refs/heads/main");
    const hook = join(git.repositoryPath(repository), "hooks", "post-receive");
    await writeFile(
      hook,
      `#!/bin/sh\nwhile read old new ref; do echo "$(date +%s%3N) $old $new $ref" >> '${log.file}'; done\n`,
    );
    await chmod(hook, 0o755);
    await writeFile(log.file, "");
    return log;
  }

  async pushes(): Promise<Push[]> {
    const text = await readFile(this.file, "utf8");
    return text
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => {
        const [at = "0", old = "", next = "", ref = ""] = line.split(" ");
        return { at: Number(at), old, new: next, ref };
      })
      .filter((p) => (typeof this.ref === "string" ? p.ref === this.ref : this.ref.test(p.ref)));
  }

  /** Marks every push so far as scanned: tokens are looked for only in later ones. */
  async skipExisting(): Promise<void> {
    this.scanned = (await this.pushes()).length;
  }

  /** The time the push that made `commit` the tip landed, if the log has it. */
  async landedAt(commit: string): Promise<number | undefined> {
    return (await this.pushes()).find((p) => p.new === commit)?.at;
  }

  /**
   * Scans the pushes not scanned yet: every `token` an added line of their diff under `path`
   * (or any of the paths) carries is recorded with that push's time. Tokens match
   * /\b[a-z]+-\d+-\d+\b/ (see edits.ts).
   */
  async scan(path: string | readonly string[]): Promise<void> {
    const paths = typeof path === "string" ? [path] : path;
    const pushes = await this.pushes();
    for (; this.scanned < pushes.length; this.scanned++) {
      const push = pushes[this.scanned]!;
      const diff = await this.git.gitIn(this.repository, [
        "diff",
        "--no-color",
        "--unified=0",
        zero.test(push.old) ? emptyTree : push.old,
        push.new,
        "--",
        ...paths,
      ]);
      for (const line of diff.split("\n")) {
        if (!line.startsWith("+") || line.startsWith("+++")) continue;
        for (const [token] of line.matchAll(/\b[a-z]+-\d+-\d+\b/g)) {
          if (!this.landed.has(token)) this.landed.set(token, push.at);
        }
      }
    }
  }
}
