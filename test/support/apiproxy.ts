// A fault in front of the test control plane: a plain-HTTP proxy that forwards every request as
// the KubeConfig it was given, and can lose a write's answer or hold a request back. A request
// whose answer it loses is sent on and lands on the API server; then the proxy drops the
// client's connection instead of answering, as a timeout or a reset connection does, so the
// client cannot know it landed. A request it holds is sent on only once the test releases it,
// as a slow or partitioned API server would answer it.
import { createServer, type IncomingMessage } from "node:http";
import { request as httpsRequest, type RequestOptions } from "node:https";
import type { AddressInfo } from "node:net";
import { KubeConfig } from "@kubernetes/client-node";

export interface ProxiedRequest {
  method: string;
  path: string;
  body: string;
}

export interface ApiProxy {
  /** A KubeConfig that reaches the control plane through the proxy, with no credential of its own. */
  kubeConfig: KubeConfig;
  /** The requests whose answers were lost. */
  lost: ProxiedRequest[];
  /** Drops every connection open now, a watch's among them, as a partition would. */
  dropConnections(): void;
  close(): Promise<void>;
}

/**
 * Starts the proxy; `loseAnswer` picks the requests whose answers are lost (after they land), and
 * `hold` the ones sent on only once the promise it returns settles.
 */
export async function startApiProxy(
  upstream: KubeConfig,
  loseAnswer: (request: ProxiedRequest) => boolean,
  hold: (request: ProxiedRequest) => Promise<unknown> | undefined = () => undefined,
): Promise<ApiProxy> {
  const target = new URL(upstream.getCurrentCluster()!.server);
  const lost: ProxiedRequest[] = [];
  const server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      const request = { method: req.method ?? "GET", path: req.url ?? "/", body: body.toString("utf8") };
      await hold(request)?.catch(() => undefined);
      if (req.socket.destroyed) return;
      const lose = loseAnswer(request);
      const options: RequestOptions = {
        hostname: target.hostname,
        port: target.port,
        path: request.path,
        method: request.method,
        headers: { ...req.headers, host: target.host },
      };
      await upstream.applyToHTTPSOptions(options);
      const forwarded = httpsRequest(options, (answer) => {
        if (lose) {
          lost.push(request);
          answer.resume();
          answer.on("end", () => req.socket.destroy());
          return;
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        // Node holds written headers until the first byte of the body; a watch's first byte is
        // its first event, maybe a minute away, and a client waits for the headers to know its
        // watch began (an informer is not synced until then).
        res.flushHeaders();
        answer.pipe(res);
      });
      forwarded.on("error", () => req.socket.destroy());
      res.on("close", () => forwarded.destroy());
      forwarded.end(body);
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: "proxied", server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: "proxied" }],
    contexts: [{ name: "proxied", cluster: "proxied", user: "proxied" }],
    currentContext: "proxied",
  });
  return {
    kubeConfig,
    lost,
    dropConnections: () => server.closeAllConnections(),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}
