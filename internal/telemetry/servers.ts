import { createServer, type Server } from "node:http";
import type { Registry } from "prom-client";

/** A bind address as controller-runtime takes it: ":8080", "127.0.0.1:8080", or "0" for off. */
export function parseBindAddress(address: string): { host: string; port: number } | undefined {
  if (address === "0") return undefined;
  const match = /^(.*):(\d+)$/.exec(address);
  if (!match) throw new Error(`invalid bind address "${address}": use [host]:port, or 0 to disable`);
  return { host: match[1] || "0.0.0.0", port: Number(match[2]) };
}

async function listen(server: Server, address: { host: string; port: number }): Promise<Server> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(address.port, address.host, resolve);
  });
  return server;
}

/** Serves the registry at /metrics. */
export function serveMetrics(registry: Registry, address: { host: string; port: number }): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.url !== "/metrics") {
      res.writeHead(404).end();
      return;
    }
    registry.metrics().then(
      (body) => res.writeHead(200, { "Content-Type": registry.contentType }).end(body),
      (err: unknown) => res.writeHead(500).end(String(err)),
    );
  });
  return listen(server, address);
}

/** A named readiness check: it returns undefined when ready, or why not. */
export type Check = () => string | undefined;

/** Serves /healthz (the process answers) and /readyz (every check passes), as kubelet probes read them. */
export function serveProbes(
  readyChecks: Record<string, Check>,
  address: { host: string; port: number },
): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.url === "/healthz") {
      res.writeHead(200, { "Content-Type": "text/plain" }).end("ok\n");
      return;
    }
    if (req.url === "/readyz") {
      const failing = Object.entries(readyChecks)
        .map(([name, check]) => [name, check()] as const)
        .filter(([, reason]) => reason !== undefined);
      const body = failing.map(([name, reason]) => `${name}: ${reason}\n`).join("") || "ok\n";
      res.writeHead(failing.length === 0 ? 200 : 503, { "Content-Type": "text/plain" }).end(body);
      return;
    }
    res.writeHead(404).end();
  });
  return listen(server, address);
}
