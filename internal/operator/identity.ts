// A process's identity: the pod's name (its hostname) and a random suffix, unique per start. It
// names the process on its Leases, and fences what it writes to Redis (types/fence.ts).
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";

export function newProcessIdentity(): string {
  return `${hostname()}-${randomBytes(4).toString("hex")}`;
}
