// The push receiver: the Git host's push webhook posts to /git-push/<path>, the path of one
// GitReceiver. A delivery is authenticated against that receiver's token before its body is
// read (a client that sends Expect: 100-continue is refused before it sends the body at all),
// the body is bounded, and what it names is routed by repository URL. The answer is 202 with
// no body, whatever was woken: a count would tell the token holder whether another namespace
// tracks the repository. An unknown path is a 404 that says nothing. The same listener takes a
// webhook applier's report of how an apply ended at /webhook-claim/<namespace>/<name>, judged
// by whoever the process hands it to (`callbacks`): its answer says why it refused, since the
// tool holding the claim's key is the one asking.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Logger } from "../telemetry/logger.ts";
import { listen } from "../telemetry/servers.ts";
import type { Runnable } from "../operator/manager.ts";
import { receiverDeliveries } from "../telemetry/instruments.ts";
import type { NamespacedName } from "../types/names.ts";
import { untilAborted } from "../timing/sleep.ts";
import { BodyTooLarge, readBody } from "../webhook/body.ts";
import { judgeHeaders, signatureHolds, type ReceiverType } from "./auth.ts";
import { readDelivery } from "./payload.ts";
import { errorText } from "../telemetry/errortext.ts";

/** A push a receiver accepted: the repository's URLs and the branch, for the routing to match. */
export interface Push {
  receiver: NamespacedName;
  urls: string[];
  branch: string;
}

export interface PushReceiverOptions {
  host: string;
  port: number;
  /** The most bytes a delivery may have: 1 MiB, well above a host's push payload. */
  maxBodyBytes?: number;
  /** Wakes the workers a push names; called after the answer is decided, never for a refused one. */
  route: (push: Push) => void;
  /**
   * A webhook applier's report to the WebhookClaim `claim`, with its body and X-Signature: the
   * HTTP status to answer and what to say. None: the route is a 404.
   */
  callbacks?: (claim: NamespacedName, body: Buffer, signature: string | undefined) => Promise<CallbackAnswer>;
  logger: Logger;
}

interface Registered {
  receiver: NamespacedName;
  type: ReceiverType;
  token: string;
}

/** What a report to a WebhookClaim is answered. */
export interface CallbackAnswer {
  status: number;
  message: string;
}

/** Where a webhook applier reports, and the most bytes a report may have. */
const callbackPrefix = "/webhook-claim/";
const callbackBodyLimit = 64 * 1024;
const objectName = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

type Outcome = "accepted" | "ignored" | "unauthorized" | "too_large" | "unreadable";

export class PushReceiver implements Runnable {
  readonly name = "push-receiver";
  readonly needLeaderElection = false;
  private server: Server | undefined;
  /** Each GitReceiver's path, with what authenticates a delivery to it. */
  private readonly paths = new Map<string, Registered>();
  /** Where it listens, once it does: the port a test asked the system for. */
  address: { host: string; port: number } | undefined;

  constructor(private readonly options: PushReceiverOptions) {}

  /** Serves a GitReceiver at `path` (its webhookPath), replacing its previous path. */
  register(path: string, receiver: NamespacedName, type: ReceiverType, token: string): void {
    this.unregister(receiver);
    this.paths.set(path, { receiver, type, token });
  }

  unregister(receiver: NamespacedName): void {
    for (const [path, registered] of this.paths) {
      const { namespace, name } = registered.receiver;
      if (namespace === receiver.namespace && name === receiver.name) this.paths.delete(path);
    }
  }

  async start(signal: AbortSignal): Promise<void> {
    const server = createServer((req, res) => void this.handle(req, res, false));
    // Judged before the client is told to send its body.
    server.on("checkContinue", (req, res) => void this.handle(req, res, true));
    this.server = server;
    this.address = await listen(server, this.options, "push notices", this.options.logger);
    await untilAborted(signal);
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  }

  private async handle(req: IncomingMessage, res: ServerResponse, expectsContinue: boolean): Promise<void> {
    const path = (req.url ?? "").split("?")[0]!;
    if (req.method === "POST" && path.startsWith(callbackPrefix) && this.options.callbacks)
      return this.callback(path.slice(callbackPrefix.length), req, res, expectsContinue);
    const registered = req.method === "POST" ? this.paths.get((req.url ?? "").split("?")[0]!) : undefined;
    if (!registered) return refuse(res, 404);
    const { receiver, type, token } = registered;
    const count = (outcome: Outcome) =>
      receiverDeliveries.inc({
        receiver_namespace: receiver.namespace,
        receiver_name: receiver.name,
        outcome,
      });
    const verdict = judgeHeaders(type, req.headers, token);
    if (verdict.kind === "refused") {
      count("unauthorized");
      return refuse(res, 401);
    }
    if (expectsContinue) res.writeContinue();
    let body: Buffer;
    try {
      body = await readBody(req, this.options.maxBodyBytes ?? 1 << 20);
    } catch (err) {
      count(err instanceof BodyTooLarge ? "too_large" : "unreadable");
      return refuse(res, err instanceof BodyTooLarge ? 413 : 400);
    }
    if (verdict.kind === "signed" && !signatureHolds(verdict, body, token)) {
      count("unauthorized");
      return refuse(res, 401);
    }
    const delivery = readDelivery(type, req.headers, body);
    if (delivery.kind === "unreadable") {
      count("unreadable");
      return refuse(res, 400);
    }
    count(delivery.kind === "push" ? "accepted" : "ignored");
    res.writeHead(202).end();
    if (delivery.kind === "push")
      for (const branch of delivery.branches) this.options.route({ receiver, urls: delivery.urls, branch });
  }

  /** A webhook applier's report to the WebhookClaim at `rest` (<namespace>/<name>). */
  private async callback(
    rest: string,
    req: IncomingMessage,
    res: ServerResponse,
    expectsContinue: boolean,
  ): Promise<void> {
    const [namespace, name, ...more] = rest.split("/");
    if (more.length > 0 || !namespace || !name || !objectName.test(namespace) || !objectName.test(name))
      return refuse(res, 404);
    if (expectsContinue) res.writeContinue();
    let body: Buffer;
    try {
      body = await readBody(req, callbackBodyLimit);
    } catch (err) {
      return refuse(res, err instanceof BodyTooLarge ? 413 : 400);
    }
    const header = req.headers["x-signature"];
    const signature = Array.isArray(header) ? header[0] : header;
    try {
      const answer = await this.options.callbacks!({ namespace, name }, body, signature);
      refuseWith(res, answer.status, answer.message);
    } catch (err) {
      this.options.logger.error("a webhook applier's report could not be handled", {
        claim: `${namespace}/${name}`,
        error: errorText(err),
      });
      refuseWith(res, 503, "The report could not be recorded now; send it again.");
    }
  }
}

/** An answer that says why, on a connection closed after it. */
function refuseWith(res: ServerResponse, status: number, message: string): void {
  res
    .writeHead(status, { "content-type": "application/json", connection: "close" })
    .end(JSON.stringify({ message }));
}

/** An answer with no body, on a connection closed after it: an unread body is never read. */
function refuse(res: ServerResponse, code: number): void {
  res.writeHead(code, { connection: "close" }).end();
}
