// Who owns each clone directory under the worker root. Two operators on one host can share a
// root (two test runs, `make run` beside `make demo`), so a process sweeps only what it owns and
// what a dead process left behind, never a directory another live process works in. The claim is
// an owner file beside the directory, {uid}.owner, so resetting a clone (removing the directory)
// does not give it up. The process is named by pid, start time and boot id: a pid reused after a
// restart, or after a reboot of a host whose root persists, is not mistaken for the owner.
import { readFileSync } from "node:fs";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";

export const defaultWorkerRoot = "/tmp/gitops-reverser-workers";

/** A process as the host tells it apart from every other; empty fields where the host cannot tell. */
export interface ProcessIdentity {
  pid: number;
  /** Field 22 of /proc/<pid>/stat: clock ticks from boot to the process's start. */
  startTime: string;
  /** /proc/sys/kernel/random/boot_id. */
  bootId: string;
}

/** What the host says of a pid now: whether a process runs under it, and since when. */
export interface ProcessProbe {
  running: boolean;
  /** Undefined where /proc cannot say. */
  startTime?: string;
}

/** Whose a directory is: nobody's, this process's, another running process's, or a dead one's. */
export type Ownership = "none" | "self" | "live" | "dead";

const ownerSuffix = ".owner";

/** Whether the process that wrote `owner` still runs, from the boot id and what the host says of its pid. */
export function ownerAlive(owner: ProcessIdentity, bootId: string, probe: ProcessProbe): boolean {
  if (owner.bootId && bootId && owner.bootId !== bootId) return false;
  if (!probe.running) return false;
  // The pid now belongs to a process started at another time: the owner is gone.
  return !(owner.startTime && probe.startTime !== undefined && probe.startTime !== owner.startTime);
}

/**
 * Whether the sweep removes a directory: one a live worker of ours uses, one another running
 * process owns, and one an existing GitBranch names are kept; everything else is left over.
 */
export function sweepRemoves(facts: {
  inUse: boolean;
  namedByGitBranch: boolean;
  owner: Ownership;
}): boolean {
  return !facts.inUse && !facts.namedByGitBranch && facts.owner !== "live";
}

function readProc(path: string): string {
  try {
    return readFileSync(path, "utf8").trim();
  } catch {
    return "";
  }
}

/** Field 22 of a stat line; the command name (field 2) may hold spaces and parentheses. */
function startTimeOf(stat: string): string {
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? "";
}

function probe(pid: number): ProcessProbe {
  let running: boolean;
  try {
    process.kill(pid, 0);
    running = true;
  } catch (err) {
    // EPERM: a process runs under the pid, as another user.
    running = (err as NodeJS.ErrnoException).code === "EPERM";
  }
  const stat = readProc(`/proc/${pid}/stat`);
  return { running, startTime: stat ? startTimeOf(stat) : undefined };
}

const bootId = readProc("/proc/sys/kernel/random/boot_id");
const self: ProcessIdentity = {
  pid: process.pid,
  startTime: startTimeOf(readProc(`/proc/${process.pid}/stat`)),
  bootId,
};

const ownerFile = (root: string, uid: string) => join(root, `${uid}${ownerSuffix}`);

/** Whose the directory `uid` under `root` is, from its owner file. */
export async function ownershipOf(root: string, uid: string): Promise<{ owner: Ownership; pid?: number }> {
  let owner: ProcessIdentity;
  try {
    owner = JSON.parse(await readFile(ownerFile(root, uid), "utf8")) as ProcessIdentity;
  } catch {
    return { owner: "none" };
  }
  if (owner.pid === self.pid && owner.startTime === self.startTime && owner.bootId === self.bootId)
    return { owner: "self", pid: owner.pid };
  return { owner: ownerAlive(owner, bootId, probe(owner.pid)) ? "live" : "dead", pid: owner.pid };
}

/**
 * Makes the directory `uid` this process's, taking it over from a dead owner. Refuses one another
 * running process owns: two operators writing one clone would corrupt it.
 */
export async function claimDirectory(root: string, uid: string): Promise<void> {
  const { owner, pid } = await ownershipOf(root, uid);
  if (owner === "live") {
    throw new Error(
      `the clone directory ${join(root, uid)} belongs to the running process ${pid}; ` +
        "give each operator on this host its own --worker-root",
    );
  }
  if (owner === "self") return;
  await mkdir(root, { recursive: true });
  // Written aside and renamed into place, so a sweep never reads half an owner file.
  const staged = join(root, `.${uid}${ownerSuffix}.${self.pid}`);
  await writeFile(staged, JSON.stringify(self));
  await rename(staged, ownerFile(root, uid));
}

/** Removes a directory and then its owner file, so the claim outlives the clone and never the reverse. */
export async function removeDirectory(root: string, uid: string): Promise<void> {
  await rm(join(root, uid), { recursive: true, force: true });
  await rm(ownerFile(root, uid), { force: true });
}

/** The directories under the root, by uid: every entry and every owner file, staged files aside. */
export function directoriesIn(entries: readonly string[]): Set<string> {
  return new Set(
    entries
      .filter((e) => !e.startsWith("."))
      .map((e) => (e.endsWith(ownerSuffix) ? e.slice(0, -ownerSuffix.length) : e)),
  );
}
