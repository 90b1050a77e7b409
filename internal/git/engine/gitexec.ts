// Runs the native git CLI: the one Git engine. Arguments go as an array (no shell ever sees
// them), the environment is fixed (no system or global config, no prompt, C locale so stderr
// can be classified), and every call is bounded by its own deadline and the caller's signal.
// Credentials reach git through the environment (transport.ts), never through an argument, and
// neither arguments nor environment are put into an error message.
import { spawn } from "node:child_process";
import { redactUrl } from "../../types/repourl.ts";

/** Whose fault a failure was: the remote's, or the local clone's (fault.ts tells them apart). */
export type Fault = "remote" | "local";

export interface GitRun {
  cwd?: string;
  /** Added to the fixed environment: a transport's credentials, an identity. */
  env?: Record<string, string>;
  /** Written to git's stdin, then closed. */
  input?: string | Buffer;
  /** Aborts the call: its deadline, any with the cycle's. */
  signal?: AbortSignal;
  /** Exit codes that are an answer rather than a failure (`git diff --quiet` exits 1). */
  okCodes?: readonly number[];
  /** Whether the call talks to the remote: its failures are then the remote's unless git says otherwise. */
  remote?: boolean;
}

export interface GitResult {
  stdout: Buffer;
  code: number;
}

/** A git call that failed; `fault` says whose fault it was, from the call and git's stderr. */
export class GitCommandError extends Error {
  constructor(
    readonly command: string,
    readonly code: number | null,
    readonly stderr: string,
    readonly fault: Fault,
    readonly stdout = "",
  ) {
    super(`git ${command} failed${code === null ? " (stopped)" : ` (exit ${code})`}: ${lastLines(stderr)}`);
  }
}

/** Messages of a local repository git cannot use, even while it was talking to the remote. */
const localPatterns = [
  /not a git repository/i,
  /index file (is )?(corrupt|smaller than expected)/i,
  /bad (object|tree|signature)/i,
  /(loose )?object .* is (corrupt|empty)/i,
  /unable to (write|create|read) /i,
  /no space left on device/i,
  /read-only file system/i,
  /disk quota exceeded/i,
  /could not lock config file/i,
  /unable to create '.*\.lock'/i,
  /cannot lock ref/i,
  /unknown revision|bad revision|ambiguous argument/i,
];

/**
 * Whose fault a failed git call is. A call that reached for the remote failed because of it
 * unless git names a broken local repository or filesystem; a call that only touched the local
 * repository failed locally.
 */
export function faultOfGitFailure(remote: boolean, stderr: string): Fault {
  if (localPatterns.some((p) => p.test(stderr))) return "local";
  return remote ? "remote" : "local";
}

const fixedEnv = {
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_TERMINAL_PROMPT: "0",
  GIT_ASKPASS: "/bin/false",
  SSH_ASKPASS: "/bin/false",
  LC_ALL: "C",
  TZ: "UTC",
};

/** The parent's environment without anything that could point git elsewhere. */
function baseEnv(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !key.startsWith("GIT_") && !key.startsWith("SSH_")) out[key] = value;
  }
  return out;
}

/** The environment every git process runs in, with a call's own additions. */
export function gitEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { ...baseEnv(), ...fixedEnv, ...extra };
}

export function runGit(args: readonly string[], run: GitRun = {}): Promise<GitResult> {
  const command = args.find((a) => !a.startsWith("-")) ?? "";
  return new Promise((resolve, reject) => {
    if (run.signal?.aborted) return reject(run.signal.reason as Error);
    const child = spawn("git", args, {
      cwd: run.cwd,
      env: gitEnv(run.env),
      stdio: ["pipe", "pipe", "pipe"],
      signal: run.signal,
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (b: Buffer) => out.push(b));
    child.stderr.on("data", (b: Buffer) => err.push(b));
    child.stdin.on("error", () => undefined);
    child.stdin.end(run.input ?? "");
    let failed: Error | undefined;
    child.on("error", (e) => (failed = e));
    child.on("close", (code) => {
      const stdout = Buffer.concat(out);
      if (failed) {
        // Aborted by its deadline: the signal's reason says which, and it is the remote's.
        return reject(run.signal?.aborted ? (run.signal.reason as Error) : failed);
      }
      if (code === 0 || (code !== null && run.okCodes?.includes(code))) return resolve({ stdout, code });
      const stderr = Buffer.concat(err).toString("utf8");
      const fault = faultOfGitFailure(run.remote ?? false, stderr);
      reject(new GitCommandError(command, code, stderr, fault, stdout.toString("utf8")));
    });
  });
}

/** The last lines of git's stderr, for a message: git says what went wrong last. */
function lastLines(stderr: string): string {
  const lines = stderr
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => l.replace(/[A-Za-z][A-Za-z0-9+.-]*:\/\/[^\s']+/g, (u) => redactUrl(u)));
  return lines.slice(-5).join("; ") || "no message";
}
