// Whether a failed publication was the remote's fault or the local clone's. A remote that cannot
// be reached is waited out; a local fault (a file missing from the worktree, a directory that
// cannot be written, a corrupt repository) is not the remote's, is reported as such, and resets
// the clone, because waiting does not repair a damaged checkout. What is not known to be local
// is treated as the remote's, which keeps every write and retries.

import { GitCommandError, type Fault } from "./gitexec.ts";

/** errno codes of a filesystem that refused or lost a file. */
const localErrnoCodes = new Set([
  "ENOENT",
  "EACCES",
  "EPERM",
  "EISDIR",
  "ENOTDIR",
  "EROFS",
  "ENOSPC",
  "EDQUOT",
  "EEXIST",
  "ENOTEMPTY",
  "EMFILE",
  "ENFILE",
  "EBUSY",
  "EIO",
  "ELOOP",
  "ENAMETOOLONG",
]);

/**
 * System calls that only ever reach the network: their errors are the remote's, whatever the
 * code (EACCES from connect is a firewall). A socket's read and write share their names with
 * the filesystem's, and fail with codes (ECONNRESET, EPIPE) that are not local ones.
 */
const networkSyscalls = new Set(["connect", "getaddrinfo", "getnameinfo"]);

/** Whose fault an error is: the error, or the first cause in its chain that says. */
export function faultOf(err: unknown): Fault {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    // A failed git call was classified from the call and git's stderr (gitexec.ts).
    if (e instanceof GitCommandError) return e.fault;
    const { code, path, syscall } = e as NodeJS.ErrnoException;
    // A filesystem call names the file it failed on; a socket never does.
    if (typeof path === "string") return "local";
    if (syscall !== undefined && networkSyscalls.has(syscall)) return "remote";
    if (code !== undefined && localErrnoCodes.has(code)) return "local";
  }
  return "remote";
}
