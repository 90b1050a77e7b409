// The process's HTTP servers: /metrics (over HTTPS behind the API server's TokenReview and
// SubjectAccessReview by default, plain HTTP only when asked) and the kubelet's probes.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { Registry } from "prom-client";
import type { Logger } from "./logger.ts";
import type { Verdict } from "./metricsauth.ts";
import { watchCertificate, type ServingCertificate } from "./servingcert.ts";
import { errorText } from "./errortext.ts";

/** A bind address as controller-runtime takes it: ":8080", "127.0.0.1:8080", or "0" for off. */
export function parseBindAddress(address: string): { host: string; port: number } | undefined {
  if (address === "0") return undefined;
  const match = /^(.*):(\d+)$/.exec(address);
  if (!match) throw new Error(`invalid bind address "${address}": use [host]:port, or 0 to disable`);
  return { host: match[1] || "0.0.0.0", port: Number(match[2]) };
}

/**
 * Listens on `address` and says where it listens: port 0 takes the kernel's pick, which only
 * this line tells (a test starts the process on port 0 and reads it back, never choosing a port
 * another process could take first). Every server the process runs listens through here.
 */
export async function listen(
  server: Pick<Server, "once" | "listen" | "address">,
  address: { host: string; port: number },
  what: string,
  logger: Logger,
): Promise<{ host: string; port: number }> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(address.port, address.host, resolve);
  });
  const bound = server.address();
  const port = typeof bound === "object" && bound ? bound.port : address.port;
  logger.info("serving", { server: what, address: `${address.host}:${port}` });
  return { host: address.host, port };
}

/** How /metrics is served: plain HTTP, or HTTPS with a certificate and a verdict on each scrape. */
export type MetricsServing =
  | { secure: false }
  | {
      secure: true;
      /** The certificate served first. */
      certificate: ServingCertificate;
      /** Where it came from, to serve again what changes there; none: a fixed (self-signed) one. */
      watch?: { dir: string; certName: string; keyName: string };
      /** Who may scrape: the verdict on a request's Authorization header. */
      check: (authorization: string | undefined) => Promise<Verdict>;
    };

/** Serves the registry at /metrics, as `serving` says. */
export async function serveMetrics(
  registry: Registry,
  address: { host: string; port: number },
  serving: MetricsServing,
  logger: Logger,
): Promise<Server> {
  const respond = (res: ServerResponse) =>
    registry.metrics().then(
      (body) => res.writeHead(200, { "Content-Type": registry.contentType }).end(body),
      (err: unknown) => res.writeHead(500).end(errorText(err)),
    );
  if (!serving.secure) {
    const server = createServer((req, res) =>
      req.url === "/metrics" ? void respond(res) : res.writeHead(404).end(),
    );
    await listen(server, address, "metrics", logger);
    return server;
  }
  const handler = async (req: IncomingMessage, res: ServerResponse) => {
    if (req.url !== "/metrics") return void res.writeHead(404).end();
    const verdict = await serving.check(req.headers.authorization);
    if (verdict.allowed) return respond(res);
    // The API server's error is the operator's to read, not the scraper's.
    if (verdict.status === 500)
      logger.error("a metrics scrape could not be authorized", { error: verdict.reason });
    const body = verdict.status === 500 ? "the scrape could not be authorized" : verdict.reason;
    res.writeHead(verdict.status, { "Content-Type": "text/plain" }).end(`${body}\n`);
  };
  const server = createHttpsServer(serving.certificate, (req, res) => void handler(req, res));
  const { watch } = serving;
  if (watch) {
    const watcher = watchCertificate(
      watch.dir,
      watch.certName,
      watch.keyName,
      (certificate) => {
        server.setSecureContext(certificate);
        logger.info("serving the metrics certificate again, as changed", { dir: watch.dir });
      },
      (err) =>
        logger.error("kept the metrics certificate: the changed one cannot be read", { error: err.message }),
    );
    server.on("close", () => watcher.close());
  }
  await listen(server, address, "metrics", logger);
  return server;
}

/** A named readiness check: it returns undefined when ready, or why not. */
export type Check = () => string | undefined;

/** Serves /healthz (the process answers) and /readyz (every check passes), as kubelet probes read them. */
export async function serveProbes(
  readyChecks: Record<string, Check>,
  address: { host: string; port: number },
  logger: Logger,
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
  await listen(server, address, "probes", logger);
  return server;
}
