// A small, real webhook applier: what a team's own deployer does behind a WebhookClaim
// (docs/webhook-applier.md), for the end-to-end tests and `make demo`. An HTTP server on
// 127.0.0.1 (a port the kernel picks) takes the operator's signed POST, checks X-Signature with
// the shared token as the operator checks a callback (refuseSignature), and answers 202 (or what
// a test configures, to be refused). Then, one request at a time, it applies for real: it fetches
// the requested commit from the repository the request names, as a Git user of its own, and runs
// `kubectl apply --server-side --force-conflicts` of its folder as the control plane's admin, under
// a field manager of its own (the one the claim lists in spec.fieldManagers). It reports how the
// apply ended as its `mode` says: "callback" POSTs {"token", "result", "message"}, signed, to the
// operator's receiver at /webhook-claim/<namespace>/<name>; "status" writes status.operation's
// phase, completedAt and message of the operation the token names, through the API, as a
// third-party tool granted patch on webhookclaims/status would; "silent" reports nothing. It
// keeps every request (body, headers, answer) and every report it sent, for assertions; it can be
// told never to apply (an applier that accepts and goes quiet), to hold its reports until
// released (an applier still working while the operator restarts), and to apply and report
// before it answers (a deployer that does its work inside the request).
import { execFile } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { createServer, request, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import { CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from "@kubernetes/client-node";
import { resourceTypes } from "../../generated/v1alpha3/index.ts";
import { refuseSignature, sign, signatureHeader } from "../../internal/applier/webhook/index.ts";
import type { ApplyRequest } from "../../internal/applier/webhook/index.ts";
import type { ControlPlane } from "./controlplane.ts";
import { kubectl } from "./kubectl.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "./reaper.ts";

const exec = promisify(execFile);

export type ReportMode = "callback" | "status" | "silent";

/** One POST the applier took, whatever it answered. */
export interface ReceivedRequest {
  /** The exact body. */
  body: string;
  headers: IncomingHttpHeaders;
  /** The body, read, when the signature held. */
  apply?: ApplyRequest;
  /** What it was answered. */
  answered: number;
  at: number;
}

/** One report the applier sent about a request it took. */
export interface SentReport {
  mode: "callback" | "status";
  token: string;
  result: "Succeeded" | "Failed";
  /** A callback's exact body and X-Signature: what a test replays. */
  body: string;
  signature: string;
  /** The receiver's (or the API server's) answer. */
  status: number;
  answer: string;
  at: number;
}

export interface WebhookApplierOptions {
  /** The claim Secret's token: the HMAC key both directions are signed with. */
  token: string;
  /** The cluster it applies to, as its admin (kubectl). */
  plane: ControlPlane;
  /** Who writes status.operation in mode "status". */
  kubeConfig: KubeConfig;
  /** Its own Git user, for reading the repository. */
  gitUser: { username: string; password: string };
  /** The folder of the repository it applies. */
  folder: string;
  /** The field manager it writes the cluster (and the claim's status) as. Default webhook-deployer. */
  fieldManager?: string;
  /** How it reports. Default callback. */
  mode?: ReportMode;
  /**
   * The operator's receiver, http://host:port, read at each callback (it moves
   * when the operator restarts).
   */
  receiverUrl?: () => string | undefined;
}

export class WebhookApplier {
  readonly requests: ReceivedRequest[] = [];
  readonly reports: SentReport[] = [];
  /** The commits it applied, in order. */
  readonly applied: string[] = [];
  /** What went wrong while applying or reporting, for a failing test to show. */
  readonly errors: string[] = [];
  readonly fieldManager: string;
  mode: ReportMode;
  /** What a request whose signature holds is answered: a 2xx, or a refusal to test. */
  answerStatus = 202;
  /** False: it accepts requests and then does nothing at all, no apply and no report. */
  applies = true;
  /**
   * True: it applies and reports before it answers, as a deployer that works inside the request
   * does; the report reaches the operator before the answer does.
   */
  synchronous = false;
  private gate: { held: Promise<void>; release: () => void } | undefined;
  private work: Promise<void> = Promise.resolve();
  private readonly clone: string;

  private constructor(
    private readonly options: WebhookApplierOptions,
    private readonly server: Server,
  ) {
    this.fieldManager = options.fieldManager ?? "webhook-deployer";
    this.mode = options.mode ?? "callback";
    this.clone = makeOwnedTempDir("webhook-applier");
  }

  static async start(options: WebhookApplierOptions): Promise<WebhookApplier> {
    const server = createServer();
    const applier = new WebhookApplier(options, server);
    server.on("request", (req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        const { status, message } = applier.take(Buffer.concat(chunks).toString("utf8"), req.headers);
        const answer = () =>
          res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ message }));
        if (applier.synchronous && status < 300) void applier.work.then(answer);
        else answer();
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", resolve);
    });
    await exec("git", ["init", "--quiet", applier.clone]);
    return applier;
  }

  /** Where the claim's spec.url points. */
  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/apply`;
  }

  /** The requests it accepted for `commit`. */
  requestsFor(commit: string): ReceivedRequest[] {
    return this.requests.filter((r) => r.apply?.commit === commit && r.answered < 300);
  }

  /** Its reports wait, each after its apply, until releaseReports. */
  holdReports(): void {
    if (this.gate) return;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    this.gate = { held, release };
  }

  releaseReports(): void {
    this.gate?.release();
    this.gate = undefined;
  }

  /** Applies the folder as `commit` holds it, as it does for a request; what kubectl said, or why not. */
  async applyCommit(
    repository: string,
    branch: string,
    commit: string,
  ): Promise<{ ok: boolean; message: string }> {
    const { username, password } = this.options.gitUser;
    // The credential goes in the environment, never on a command line an error message repeats.
    const env = {
      ...process.env,
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_CONFIG_GLOBAL: "/dev/null",
      GIT_TERMINAL_PROMPT: "0",
      GIT_CONFIG_COUNT: "1",
      GIT_CONFIG_KEY_0: "http.extraHeader",
      GIT_CONFIG_VALUE_0: `Authorization: Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`,
    };
    const git = (...args: string[]) => exec("git", args, { cwd: this.clone, env });
    try {
      await git("fetch", "--quiet", repository, `+refs/heads/${branch}:refs/remotes/origin/${branch}`);
      // The tip may have moved on since the request: the commit asked for is what is applied.
      await git("cat-file", "-e", `${commit}^{commit}`).catch(() =>
        git("fetch", "--quiet", repository, commit),
      );
      await git("checkout", "--quiet", "--force", "--detach", commit);
      await git("clean", "--quiet", "-fdx");
    } catch (err) {
      const said = (err as { stderr?: string }).stderr?.trim() || String(err);
      return { ok: false, message: `fetching ${commit} failed: ${said}` };
    }
    const folder = join(this.clone, this.options.folder);
    if (!hasManifests(folder)) return { ok: true, message: `${this.options.folder} holds nothing to apply.` };
    const applied = await kubectl(
      this.options.plane,
      "apply",
      "--server-side",
      `--field-manager=${this.fieldManager}`,
      "--force-conflicts",
      "--recursive",
      "-f",
      folder,
    );
    if (applied.code !== 0) return { ok: false, message: applied.stderr.trim().slice(0, 1000) };
    this.applied.push(commit);
    return { ok: true, message: `Applied ${commit.slice(0, 12)} as ${this.fieldManager}.` };
  }

  async close(): Promise<void> {
    this.releaseReports();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    await this.work;
    removeOwnedTempDir(this.clone);
  }

  /** Judges one POST, answers it, and queues the apply. */
  private take(body: string, headers: IncomingHttpHeaders): { status: number; message: string } {
    const received: ReceivedRequest = { body, headers, answered: 0, at: Date.now() };
    this.requests.push(received);
    const header = headers[signatureHeader.toLowerCase()];
    const bad = refuseSignature(body, Array.isArray(header) ? header[0] : header, this.options.token);
    if (bad) return { status: (received.answered = 401), message: bad };
    let apply: ApplyRequest;
    try {
      apply = JSON.parse(body) as ApplyRequest;
    } catch {
      return { status: (received.answered = 400), message: "not JSON" };
    }
    received.apply = apply;
    received.answered = this.answerStatus;
    if (this.answerStatus >= 300) return { status: this.answerStatus, message: "refused, as configured" };
    if (this.applies)
      this.work = this.work
        .then(() => this.carryOut(apply))
        .catch((err: unknown) => void this.errors.push(String(err)));
    return { status: this.answerStatus, message: "accepted" };
  }

  /** Applies, then reports as the mode is when the report is due. */
  private async carryOut(apply: ApplyRequest): Promise<void> {
    const { ok, message } = await this.applyCommit(apply.repository, apply.branch, apply.commit);
    if (!ok) this.errors.push(message);
    await this.gate?.held;
    const result = ok ? "Succeeded" : "Failed";
    if (this.mode === "callback") await this.callback(apply, result, message);
    if (this.mode === "status") await this.writeStatus(apply, result, message);
  }

  /**
   * POSTs the signed report to the operator's receiver; an unreachable or failing receiver is
   * asked again, as a tool would.
   */
  private async callback(
    apply: ApplyRequest,
    result: "Succeeded" | "Failed",
    message: string,
  ): Promise<void> {
    const body = JSON.stringify({ token: apply.token, result, message });
    const signature = sign(body, this.options.token);
    for (let attempt = 1; ; attempt++) {
      const base = this.options.receiverUrl?.();
      const answer = base
        ? await post(`${base}/webhook-claim/${apply.claim}`, body, signature).catch((err: unknown) => ({
            status: 0,
            text: String(err),
          }))
        : { status: 0, text: "no receiver" };
      if ((answer.status > 0 && answer.status < 500) || attempt >= 20) {
        this.reports.push({
          mode: "callback",
          token: apply.token,
          result,
          body,
          signature,
          status: answer.status,
          answer: answer.text,
          at: Date.now(),
        });
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  /**
   * Writes the end onto status.operation through the status subresource: a JSON patch that tests
   * the operation's requestToken first, so it never ends another operation, and sets only phase,
   * completedAt and message.
   */
  private async writeStatus(
    apply: ApplyRequest,
    result: "Succeeded" | "Failed",
    message: string,
  ): Promise<void> {
    const [namespace, name] = apply.claim.split("/") as [string, string];
    const { group, version, plural } = resourceTypes.WebhookClaim;
    const api = this.options.kubeConfig.makeApiClient(CustomObjectsApi);
    const patch = [
      { op: "test", path: "/status/operation/requestToken", value: apply.token },
      { op: "replace", path: "/status/operation/phase", value: result },
      { op: "add", path: "/status/operation/completedAt", value: new Date().toISOString() },
      { op: "add", path: "/status/operation/message", value: message },
    ];
    let status = 200;
    let answer = "";
    try {
      await api.patchNamespacedCustomObjectStatus(
        { group, version, plural, namespace, name, body: patch, fieldManager: this.fieldManager },
        setHeaderOptions("Content-Type", PatchStrategy.JsonPatch),
      );
    } catch (err) {
      status = (err as { code?: number }).code ?? 0;
      answer = String(err);
    }
    this.reports.push({
      mode: "status",
      token: apply.token,
      result,
      body: JSON.stringify(patch),
      signature: "",
      status,
      answer,
      at: Date.now(),
    });
  }
}

/** Whether the folder holds a manifest kubectl would apply. */
function hasManifests(folder: string): boolean {
  if (!existsSync(folder)) return false;
  return readdirSync(folder).some((entry) => {
    const path = join(folder, entry);
    return statSync(path).isDirectory() ? hasManifests(path) : /\.(ya?ml|json)$/.test(entry);
  });
}

/** A signed JSON POST and its answer: how the applier reports, and how a test forges or replays a report. */
export function post(
  url: string,
  body: string,
  signature: string,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "content-length": String(Buffer.byteLength(body)),
        [signatureHeader]: signature,
      },
    });
    req.on("error", reject);
    req.on("response", (res) => {
      let text = "";
      res.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.end(body);
  });
}
