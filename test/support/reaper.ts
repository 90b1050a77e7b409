import { mkdtempSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * The last line of defence against leftovers. Every process and temp dir the harness
 * creates is registered here; if the test process exits or is interrupted before a
 * harness `stop()` ran, they are killed and removed on the way out. A test process
 * that is killed outright cannot run this: its children die through their parent-death
 * signal (see process.ts), and its temp dirs are swept by the next harness that starts.
 */

const liveProcesses = new Set<number>();
const liveDirs = new Set<string>();
let installed = false;

/** The directory under which every harness temp dir lives, one subfolder per owner process. */
export const testenvTmpRoot = join(tmpdir(), "gitops-reverser-testenv");

export function trackProcess(pid: number): void {
  installHandlers();
  liveProcesses.add(pid);
}

export function untrackProcess(pid: number): void {
  liveProcesses.delete(pid);
}

/** Creates a temp dir named after this process, so a later sweep can tell whether its owner is gone. */
export function makeOwnedTempDir(prefix: string): string {
  installHandlers();
  mkdirSync(testenvTmpRoot, { recursive: true });
  sweepOrphanedTempDirs();
  const dir = mkdtempSync(join(testenvTmpRoot, `${prefix}-${process.pid}-`));
  liveDirs.add(dir);
  return dir;
}

export function removeOwnedTempDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
  liveDirs.delete(dir);
}

/** The pid of the process that created a harness temp dir, read from its name. */
export function ownerPidOf(dirName: string): number | undefined {
  const match = /-(\d+)-[^-]+$/.exec(dirName);
  return match ? Number(match[1]) : undefined;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Removes temp dirs whose owning process no longer exists. */
export function sweepOrphanedTempDirs(): void {
  let entries: string[];
  try {
    entries = readdirSync(testenvTmpRoot);
  } catch {
    return;
  }
  for (const name of entries) {
    const owner = ownerPidOf(name);
    if (owner !== undefined && owner !== process.pid && !isAlive(owner)) {
      rmSync(join(testenvTmpRoot, name), { recursive: true, force: true });
    }
  }
}

function reapAll(): void {
  for (const pid of liveProcesses) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
  liveProcesses.clear();
  for (const dir of liveDirs) rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  liveDirs.clear();
}

function installHandlers(): void {
  if (installed) return;
  installed = true;
  process.once("exit", reapAll);
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.once(signal, () => {
      reapAll();
      // Re-raise with the default disposition, so the exit status still says which signal ended us.
      process.kill(process.pid, signal);
    });
  }
}
