// A free TCP port for a daemon that cannot be told port 0 and read back (kube-apiserver and
// etcd, Redis, sshd, Flux's controllers, the audit ingress kube-apiserver posts to): the port
// must be known before that process starts. Our own processes and servers bind port 0 and say
// where they listen (test/support/operator.ts reads the operator's "serving" line). The
// kernel's own pick comes from the ephemeral range, which every outgoing connection on the
// machine also draws its local port from: between the pick and the bind, a test's client
// connection could take it (EADDRINUSE). So the port is picked below that range, at random, and
// checked bindable; only a machine with no room there falls back to the kernel's pick. Test
// processes side by side pick from the same range, so each port picked is claimed for the life of
// the process that picked it (a file named after it, holding the pid, made only if absent): no
// other test process picks it while that one lives, however long its daemon takes to bind (an
// audit ingress waits for a whole control plane to start first). A start that still loses its
// port is started again on another (startOnChosenPorts).
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The lowest port picked: above the well-known and registered ports most daemons take. */
const floor = 10_000;
const attempts = 50;
/** Where the ports test processes picked are claimed, one file a port. */
const claims = join(tmpdir(), "gitops-reverser-ports");
/** The ports this process claimed, given back when it exits. */
const claimed = new Set<number>();

/** A free TCP port on loopback, outside the ephemeral range where one can be had. */
export async function freePort(host = "127.0.0.1"): Promise<number> {
  const ceiling = ephemeralLow() - 1;
  for (let attempt = 0; ceiling > floor && attempt < attempts; attempt++) {
    const port = floor + Math.floor(Math.random() * (ceiling - floor + 1));
    if (!claimPort(port)) continue;
    if ((await listenOn(port, host).catch(() => undefined)) !== undefined) return port;
  }
  return listenOn(0, host);
}

/**
 * Claims `port` for this process: false when this process or another live one already has. A
 * claim left by a process that died (SIGKILL, no exit handler) is taken over.
 */
export function claimPort(port: number): boolean {
  if (claimed.has(port)) return false;
  mkdirSync(claims, { recursive: true });
  if (!swept) sweepDead();
  const file = join(claims, String(port));
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, String(process.pid), { flag: "wx" });
      if (claimed.size === 0) process.once("exit", release);
      claimed.add(port);
      return true;
    } catch {
      const owner = ownerOf(file);
      if (owner === undefined) continue; // given back meanwhile: try again
      if (!ownerDead(owner)) return false;
      rmSync(file, { force: true });
    }
  }
  return false;
}

/** Whether this process has cleared the claims of dead processes yet. */
let swept = false;

/**
 * Removes, once a process, the claims of processes that died without giving them back (a test
 * process the runner killed runs no exit handler), so the directory holds live claims only
 * instead of growing by a few dozen files every run.
 */
function sweepDead(): void {
  swept = true;
  for (const name of readdirSync(claims)) {
    const file = join(claims, name);
    const owner = ownerOf(file);
    if (owner !== undefined && ownerDead(owner)) rmSync(file, { force: true });
  }
}

/** The pid a claim file holds ("" while it is being written), undefined when it is gone. */
function ownerOf(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8").trim();
  } catch {
    return undefined;
  }
}

/** An empty claim is one being written: its process lives. */
function ownerDead(owner: string): boolean {
  return owner !== "" && !alive(Number(owner));
}

function alive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Gives back every port this process claimed. */
function release(): void {
  for (const port of claimed) rmSync(join(claims, String(port)), { force: true });
  claimed.clear();
}

/** The first port of the kernel's ephemeral range (Linux), or the IANA one elsewhere. */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 0 ? low : 49_152;
  } catch {
    return 49_152;
  }
}

/** Binds `port` (0: any) on `host`, closes it again, and resolves to the port it had. */
function listenOn(port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(port, host, () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === "object") resolve(address.port);
        else reject(new Error("could not read the allocated port"));
      });
    });
  });
}

/**
 * Starts a server that another process binds on ports freePort chose (`start` chooses them
 * afresh each time), again when it could not bind: a test process beside this one can take a
 * port between the choice and the bind. A daemon that cannot be given port 0 to read back
 * (kube-apiserver, etcd, Redis, sshd, Flux's controllers) is started this way; anything but a
 * lost port fails at once, and the third lost port too.
 */
export async function startOnChosenPorts<T>(
  start: () => Promise<T>,
  /** How a failed start says it lost its port: by default, its log says it could not bind. */
  lost: (err: unknown) => boolean = lostPort,
  attempts = 3,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (err) {
      if (attempt >= attempts || !lost(err)) throw err;
    }
  }
}

/** Whether a start failed because its process could not bind a port (its log says so). */
export function lostPort(err: unknown): boolean {
  return /address already in use|cannot bind any address|bind to port .* failed/i.test(String(err));
}
