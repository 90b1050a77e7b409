import { createServer, type Server } from "node:http";

/** The parts of an audit.k8s.io/v1 Event the tests look at. */
export interface AuditEvent {
  auditID: string;
  stage: string;
  verb: string;
  requestURI?: string;
  /** When the API server received the request, to the microsecond. */
  requestReceivedTimestamp?: string;
  userAgent?: string;
  user: { username: string; groups?: string[] };
  objectRef?: {
    resource?: string;
    namespace?: string;
    name?: string;
    apiVersion?: string;
    resourceVersion?: string;
  };
  responseObject?: { metadata?: { resourceVersion?: string; uid?: string } };
  responseStatus?: { code?: number };
}

export interface AuditEventList {
  apiVersion: string;
  kind: string;
  items: AuditEvent[];
}

/**
 * An HTTP endpoint kube-apiserver's audit webhook posts to. It keeps every EventList it
 * receives, in order, with the path it was posted to.
 */
export class AuditSink {
  /** Each delivery with its request path and query: kube-apiserver appends `?timeout=30s` to the URL. */
  readonly received: { path: string; query: string; body: AuditEventList }[] = [];
  /**
   * Runs before each delivery is answered. With the webhook in blocking mode, kube-apiserver
   * goes on with the audited request only once it has the answer: a test can hold a request at
   * one of its stages while it changes the cluster.
   */
  beforeAnswer: (body: AuditEventList) => Promise<void> | void = () => undefined;
  private readonly server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as AuditEventList;
        const url = new URL(req.url ?? "/", "http://sink");
        this.received.push({ path: url.pathname, query: url.search, body });
        const answer = () => res.writeHead(200).end();
        void Promise.resolve(this.beforeAnswer(body)).then(answer, answer);
      } catch {
        res.writeHead(400).end();
      }
    });
  });

  private constructor() {}

  static async start(): Promise<AuditSink> {
    const sink = new AuditSink();
    await new Promise<void>((resolve) => sink.server.listen(0, "127.0.0.1", resolve));
    return sink;
  }

  get port(): number {
    const address = this.server.address();
    if (!address || typeof address !== "object") throw new Error("the audit sink is not listening");
    return address.port;
  }

  url(path = "/audit-webhook/testenv"): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Every event received so far, flattened across EventLists. */
  get events(): AuditEvent[] {
    return this.received.flatMap((r) => r.body.items);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
