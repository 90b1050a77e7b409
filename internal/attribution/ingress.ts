// The audit ingress: kube-apiserver's audit webhook posts EventLists to
// /audit-webhook/<audit-route>, over TLS with a client certificate the audit CA signed. It
// answers fast: it validates, extracts the facts, hands them to the fact stream, and returns.
// kube-apiserver appends ?timeout=…, so the route comes from the path alone. Some KubeProvider
// must carry that route; a route none carries is answered 404 with no body.
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { Runnable } from "../operator/manager.ts";
import type { Logger } from "../telemetry/logger.ts";
import { listen } from "../telemetry/servers.ts";
import { factsByType, type AuditEvent, type Fact } from "./fact.ts";
import { auditAppends, auditFacts, auditRequests } from "../telemetry/instruments.ts";
import { readBody } from "../webhook/body.ts";

export interface AuditIngressOptions {
  host: string;
  port: number;
  /** PEM serving certificate, key, and the CA client certificates must chain to; none: plain HTTP (--audit-insecure). */
  tls?: { cert: string; key: string; ca: string };
  /** With --author-attribution-audit-route-annotation-key: the bare /audit-webhook, each event naming its route. */
  routeAnnotationKey?: string;
  /** The most bytes one EventList may have. */
  maxBodyBytes?: number;
  /** Where the facts go: one call per route and type of a request; a rejection is answered 503. */
  append: (route: string, type: string, facts: Fact[]) => Promise<void>;
  /**
   * Whether some KubeProvider carries an audit route: facts on a route none carries would be
   * kept for nobody, so such a request is answered 404 with no body, and such an event on the
   * shared endpoint is left out. Undefined: every well-formed route is taken.
   */
  carries?: (route: string) => boolean;
  /** The fact transport, for the appends' metric. */
  transport: string;
  logger: Logger;
}

const routePattern = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const prefix = "/audit-webhook";

export class AuditIngress implements Runnable {
  readonly name = "audit-ingress";
  readonly needLeaderElection = false;
  private server: Server | undefined;
  /** Where it listens, once it does: the port a test asked the system for. */
  address: { host: string; port: number } | undefined;

  constructor(private readonly options: AuditIngressOptions) {}

  async start(signal: AbortSignal): Promise<void> {
    const handler = (req: IncomingMessage, res: ServerResponse) => void this.handle(req, res);
    const { tls } = this.options;
    this.server = tls
      ? createHttpsServer({ ...tls, requestCert: true, rejectUnauthorized: true }, handler)
      : createHttpServer(handler);
    this.server.on("tlsClientError", () => auditRequests.inc({ code: "tls" }));
    this.address = await listen(this.server, this.options, "audit events", this.options.logger);
    await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
    // kube-apiserver keeps its connection open between batches: close it too, or close() waits on it.
    const closed = new Promise<void>((resolve) => this.server!.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? "").split("?")[0]!;
    const route = path.startsWith(`${prefix}/`) ? path.slice(prefix.length + 1) : undefined;
    const shared = path === prefix && this.options.routeAnnotationKey !== undefined;
    if (req.method !== "POST" || !((route !== undefined && routePattern.test(route)) || shared)) {
      return answer(res, 404, "");
    }
    if (route !== undefined && this.options.carries && !this.options.carries(route))
      return answer(res, 404, "");
    let events: AuditEvent[];
    try {
      const read = await readBody(req, this.options.maxBodyBytes ?? 32 << 20);
      const body = JSON.parse(read.toString("utf8")) as {
        items?: unknown;
      };
      if (!Array.isArray(body.items)) return answer(res, 400, "not an audit.k8s.io EventList");
      events = body.items as AuditEvent[];
    } catch (err) {
      return answer(res, 400, err instanceof Error ? err.message : "unreadable body");
    }
    const appends: Promise<void>[] = [];
    for (const [eventRoute, list] of route !== undefined
      ? [[route, events] as const]
      : this.byAnnotation(events)) {
      for (const [type, facts] of factsByType(list, eventRoute)) {
        appends.push(this.append(eventRoute, type, facts));
      }
    }
    const failed = (await Promise.allSettled(appends)).find((r) => r.status === "rejected");
    if (!failed) return answer(res, 200, "{}");
    this.options.logger.error("the fact stream refused an append; kube-apiserver will retry", {
      error: String(failed.reason),
    });
    // kube-apiserver's webhook backend retries an error that suggests a client delay (a
    // Retry-After), with its own backoff, so a short outage costs no facts.
    answer(res, 503, "the fact stream is unavailable", { "retry-after": "1" });
  }

  private async append(route: string, type: string, facts: Fact[]): Promise<void> {
    const { transport } = this.options;
    try {
      await this.options.append(route, type, facts);
    } catch (err) {
      auditAppends.inc({ transport, outcome: "failed" });
      throw err;
    }
    auditAppends.inc({ transport, outcome: "ok" });
    this.options.logger.debug("audit facts appended", { route, type, facts: facts.length });
    auditFacts.inc({ audit_route: route }, facts.length);
  }

  /** The shared endpoint's events, grouped by the route each one's annotation names. */
  private byAnnotation(events: AuditEvent[]): [string, AuditEvent[]][] {
    const byRoute = new Map<string, AuditEvent[]>();
    for (const event of events) {
      const route = event.annotations?.[this.options.routeAnnotationKey!];
      if (!route || !routePattern.test(route)) continue;
      if (this.options.carries && !this.options.carries(route)) continue;
      byRoute.set(route, [...(byRoute.get(route) ?? []), event]);
    }
    return [...byRoute];
  }
}

function answer(res: ServerResponse, code: number, body: string, headers: Record<string, string> = {}): void {
  auditRequests.inc({ code: String(code) });
  res.writeHead(code, { "content-type": code === 200 ? "application/json" : "text/plain", ...headers });
  res.end(body);
}
