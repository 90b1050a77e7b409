import { execFile } from "node:child_process";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);

/** Runs the real `git` CLI with a clean, predictable environment, and returns its trimmed stdout. */
export async function git(
  args: string[],
  options: {
    cwd?: string;
    env?: NodeJS.ProcessEnv;
    /** Keep the output's bytes, trailing newline included. */ raw?: boolean;
  } = {},
): Promise<string> {
  const { stdout } = await execFileAsync("git", args, {
    cwd: options.cwd,
    env: {
      ...process.env,
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_CONFIG_GLOBAL: "/dev/null",
      GIT_TERMINAL_PROMPT: "0",
      ...options.env,
    },
    maxBuffer: 64 * 1024 * 1024,
  });
  return options.raw ? stdout : stdout.trim();
}
