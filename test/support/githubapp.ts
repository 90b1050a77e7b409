// A stand-in for GitHub's App endpoints, as GitHub documents them: POST
// /app/installations/{id}/access_tokens with `Authorization: Bearer <JWT>` answers 201 with
// {token, expires_at} when the JWT is RS256, signed by the App's key, issued by the App's ID,
// not expired and living at most ten minutes; 401 when it is not; 404 for an installation the
// App does not have. Tokens live `tokenLifetimeMs` (an hour on GitHub; seconds in a test). The
// harness Git server asks `checkPassword` whether a basic-auth password is a live token, so Git
// is served with those tokens only, each request recorded under the token's name.
import { generateKeyPairSync, randomBytes, verify, type KeyObject } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";

/** An installation token the stand-in issued. */
export interface IssuedRecord {
  /** "token-1", "token-2", …: what the Git server records as the request's user. */
  name: string;
  token: string;
  installationId: string;
  issuedAt: number;
  expiresAt: number;
}

/** One POST to the token endpoint, answered or refused. */
export interface ExchangeRecord {
  at: number;
  installationId: string;
  status: number;
}

export interface GitHubAppServerOptions {
  appId: string;
  /** The installations the App has. */
  installations: string[];
  /** How long an issued token lives. */
  tokenLifetimeMs: number;
}

/** A fresh App key pair, the private key PKCS#1 PEM as GitHub's download is. */
export function generateAppKey(): { privateKey: string; publicKey: KeyObject } {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  return { privateKey: privateKey.export({ type: "pkcs1", format: "pem" }).toString(), publicKey };
}

export class GitHubAppServer {
  readonly issued: IssuedRecord[] = [];
  readonly exchanges: ExchangeRecord[] = [];
  /** The App's private key, PEM: what its credential Secret holds. */
  readonly privateKey: string;
  private readonly publicKey: KeyObject;

  private readonly server: Server;

  private constructor(private readonly options: GitHubAppServerOptions) {
    const key = generateAppKey();
    this.privateKey = key.privateKey;
    this.publicKey = key.publicKey;
    this.server = createServer((req, res) => this.handle(req, res));
  }

  static async start(options: GitHubAppServerOptions): Promise<GitHubAppServer> {
    const self = new GitHubAppServer(options);
    await new Promise<void>((resolve, reject) => {
      self.server.once("error", reject);
      self.server.listen(0, "127.0.0.1", () => resolve());
    });
    return self;
  }

  /** The API's base, as githubAppBaseURL or githubAppEnterpriseBaseUrl names it. */
  get apiUrl(): string {
    const address = this.server.address();
    if (!address || typeof address !== "object") throw new Error("not listening");
    return `http://127.0.0.1:${address.port}/api/v3`;
  }

  /**
   * For GitServer's checkPassword: the name of the live token `password` is, sent beside the
   * username `x-access-token`, or undefined (an unknown or expired token is refused).
   */
  readonly checkPassword = (username: string, password: string): string | undefined => {
    if (username !== "x-access-token") return undefined;
    const found = this.issued.find((t) => t.token === password);
    return found && Date.now() < found.expiresAt ? found.name : undefined;
  };

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    req.resume();
    const answer = (status: number, body: object) =>
      res.writeHead(status, { "Content-Type": "application/json; charset=utf-8" }).end(JSON.stringify(body));
    const match = /^\/api\/v3\/app\/installations\/([^/]+)\/access_tokens$/.exec(req.url ?? "");
    if (req.method !== "POST" || !match) {
      answer(404, { message: "Not Found" });
      return;
    }
    const installationId = decodeURIComponent(match[1]!);
    const record = (status: number) => this.exchanges.push({ at: Date.now(), installationId, status });
    if (!/^application\/vnd\.github\+json/.test(req.headers.accept ?? "")) {
      record(415);
      answer(415, { message: "Unsupported Media Type" });
      return;
    }
    const refusal = this.refuseJwt(req.headers.authorization);
    if (refusal) {
      record(401);
      answer(401, { message: refusal });
      return;
    }
    if (!this.options.installations.includes(installationId)) {
      record(404);
      answer(404, { message: "Not Found" });
      return;
    }
    const issuedAt = Date.now();
    const token: IssuedRecord = {
      name: `token-${this.issued.length + 1}`,
      token: `ghs_${randomBytes(18).toString("base64url")}`,
      installationId,
      issuedAt,
      expiresAt: issuedAt + this.options.tokenLifetimeMs,
    };
    this.issued.push(token);
    record(201);
    answer(201, {
      token: token.token,
      expires_at: new Date(token.expiresAt).toISOString(),
      permissions: { contents: "write" },
      repository_selection: "all",
    });
  }

  /** Why the Authorization header holds no JWT this App issued and signed; undefined when it does. */
  private refuseJwt(header: string | undefined): string | undefined {
    const jwt = header ? /^Bearer\s+(\S+)$/i.exec(header)?.[1] : undefined;
    const parts = jwt?.split(".");
    if (!parts || parts.length !== 3) return "A JSON web token could not be decoded";
    const [head, body, signature] = parts as [string, string, string];
    let jose: { alg?: unknown };
    let claims: { iat?: unknown; exp?: unknown; iss?: unknown };
    try {
      jose = JSON.parse(Buffer.from(head, "base64url").toString("utf8")) as typeof jose;
      claims = JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as typeof claims;
    } catch {
      return "A JSON web token could not be decoded";
    }
    if (jose.alg !== "RS256") return "A JSON web token could not be decoded";
    const signed = verify(
      "sha256",
      Buffer.from(`${head}.${body}`),
      this.publicKey,
      Buffer.from(signature, "base64url"),
    );
    if (!signed) return "A JSON web token could not be decoded";
    if (String(claims.iss) !== this.options.appId) return "Integration not found";
    const now = Math.floor(Date.now() / 1000);
    if (typeof claims.exp !== "number" || typeof claims.iat !== "number")
      return "Missing 'exp' or 'iat' claim";
    if (claims.exp <= now)
      return "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires";
    if (claims.exp - now > 600 || claims.exp - claims.iat > 600)
      return "'Expiration time' claim ('exp') is too far in the future";
    if (claims.iat > now + 60)
      return "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued";
    return undefined;
  }
}
