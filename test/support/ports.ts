// A free TCP port for a server another process binds (an operator's audit ingress, a receiver, a
// Flux controller), where the port must be known before that process starts. The kernel's own
// pick (listen on port 0) comes from the ephemeral range, which every outgoing connection on the
// machine also draws its local port from: between the pick and the bind, a test's client
// connection could take it (EADDRINUSE). So the port is picked below that range, at random, and
// checked bindable; only a machine with no room there falls back to the kernel's pick.
import { readFileSync } from "node:fs";
import { createServer } from "node:net";

/** The lowest port picked: above the well-known and registered ports most daemons take. */
const floor = 10_000;
const attempts = 50;

/** A free TCP port on loopback, outside the ephemeral range where one can be had. */
export async function freePort(host = "127.0.0.1"): Promise<number> {
  const ceiling = ephemeralLow() - 1;
  for (let attempt = 0; ceiling > floor && attempt < attempts; attempt++) {
    const port = floor + Math.floor(Math.random() * (ceiling - floor + 1));
    if ((await listenOn(port, host).catch(() => undefined)) !== undefined) return port;
  }
  return listenOn(0, host);
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
