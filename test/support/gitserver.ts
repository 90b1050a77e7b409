import { spawn } from "node:child_process";
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import { dirname, join } from "node:path";
import { gitServiceOf, parseBasicAuth, parseCgiHead } from "./cgi.ts";
import { git } from "./gitcli.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "./reaper.ts";

export type GitAccess = "read" | "write";

export interface GitUser {
  username: string;
  password: string;
  /** `read` may fetch but not open a receive-pack session. Default `write`. */
  access?: GitAccess;
  /** A token this user may also send as `Authorization: Bearer`. */
  bearerToken?: string;
}

/**
 * HTTPS instead of HTTP: the server's certificate and key (PEM), and, when `clientCa` is set, a
 * client certificate signed by it is required before any request is read. A client
 * certificate whose common name is a user's name authenticates that user without a header.
 */
export interface GitServerTls {
  cert: string;
  key: string;
  clientCa?: string;
}

/** One request the server answered, for tests that count what a client asked for. */
export interface GitRequestRecord {
  method: string;
  repository: string;
  service: "upload-pack" | "receive-pack" | undefined;
  /** True for the ref advertisement (`GET …/info/refs`), false for the pack exchange. */
  advertisement: boolean;
  username: string | undefined;
  status: number;
}

export interface ForeignCommit {
  branch?: string;
  /**
   * Path to new content; null deletes the file. A function makes the content from what the
   * branch holds: when the operator pushed in between, the change is made again on its tip.
   */
  files: Record<string, string | null | ((current: string | undefined) => string)>;
  message?: string;
  author?: { name: string; email: string };
  /** Who pushes; the first user with write access by default. */
  as?: GitUser;
  /** Where a branch that does not exist yet starts; an orphan branch if omitted. */
  startFrom?: string;
}

/** One push a repository received, as its post-receive hook recorded it (GitServer.recordPushes). */
export interface RecordedPush {
  /** The push options it carried (`git push -o`), in order. */
  options: string[];
  /** Each ref it updated, with the names the client asked for (refs/for/main, not where it was kept). */
  refs: { old: string; new: string; ref: string }[];
}

/**
 * A password check beside the users': the name a basic-auth username and password authenticate
 * (recorded as the request's user, with write access), or undefined to refuse them.
 */
export type PasswordCheck = (username: string, password: string) => string | undefined;

const httpBackend = "/usr/lib/git-core/git-http-backend";

/** The log recordPushes' hook appends to, in the bare repository. */
const pushLog = "pushes.log";

/**
 * The post-receive hook recordPushes installs: one block a push, `push`, then `option\t<value>`
 * per push option, `ref\t<old>\t<new>\t<ref>` per update, then `end`, appended in one write.
 * With review refs, a ref under refs/for/ is kept as refs/changes/<n> and removed under its
 * own name, as Gerrit and the AGit flow never store it: every push to it is a new request.
 */
const recordingHook = (reviewRefs: boolean) => `#!/bin/sh
tab=$(printf '\t')
record=""
i=0
while [ "$i" -lt "\${GIT_PUSH_OPTION_COUNT:-0}" ]; do
  eval "option=\\\${GIT_PUSH_OPTION_$i}"
  record="$record""option$tab$option
"
  i=$((i + 1))
done
while read -r old new ref; do
  record="$record""ref$tab$old$tab$new$tab$ref
"
  case "${reviewRefs ? "$ref" : ""}" in
    refs/for/*)
      n=$(($(git for-each-ref --format=x refs/changes/ | wc -l) + 1))
      git update-ref "refs/changes/$n" "$new"
      git update-ref -d "$ref"
      ;;
  esac
done
printf 'push\n%send\n' "$record" >> ${pushLog}
`;

/**
 * A real Git server over smart HTTP: `git http-backend` behind a Node HTTP server on
 * loopback, with HTTP Basic auth (and bearer tokens, and over HTTPS client certificates). `stop()` and `start()` take it down and bring it back on
 * the same port, with its repositories intact, to simulate an outage; `close()` tears it
 * down and removes everything.
 */
export class GitServer {
  readonly requests: GitRequestRecord[] = [];
  private readonly users = new Map<string, GitUser>();
  private readonly sockets = new Set<Socket>();
  private server: Server | undefined;
  private beforeNextPush: (() => Promise<unknown>) | undefined;

  private constructor(
    readonly root: string,
    private listenPort: number,
    /** The loopback address it listens on: 127.0.0.1 unless a test needs a port of its own there. */
    readonly host: string,
    private readonly tls: GitServerTls | undefined,
    private readonly checkPassword?: PasswordCheck,
  ) {}

  static async start(
    options: {
      users?: GitUser[];
      port?: number;
      host?: string;
      tls?: GitServerTls;
      /** Another way a basic-auth password is accepted: a GitHub App's installation tokens. */
      checkPassword?: PasswordCheck;
    } = {},
  ): Promise<GitServer> {
    const root = makeOwnedTempDir("gitserver");
    const gitServer = new GitServer(
      root,
      options.port ?? 0,
      options.host ?? "127.0.0.1",
      options.tls,
      options.checkPassword,
    );
    for (const user of options.users ?? []) gitServer.addUser(user);
    try {
      await gitServer.start();
    } catch (err) {
      removeOwnedTempDir(root);
      throw err;
    }
    return gitServer;
  }

  get port(): number {
    return this.listenPort;
  }

  /** http(s)://host:port, without the scheme's default port: the spelling a hosted repository's URL has. */
  get baseUrl(): string {
    const scheme = this.tls ? "https" : "http";
    const defaultPort = this.tls ? 443 : 80;
    return this.listenPort === defaultPort
      ? `${scheme}://${this.host}`
      : `${scheme}://${this.host}:${this.listenPort}`;
  }

  addUser(user: GitUser): void {
    this.users.set(user.username, user);
  }

  repositoryUrl(name: string): string {
    return `${this.baseUrl}/${name}.git`;
  }

  repositoryPath(name: string): string {
    return join(this.root, "repositories", `${name}.git`);
  }

  /**
   * Creates an empty bare repository and returns its URL. Non-fast-forward updates are
   * refused, as on a protected branch, so an accidental force push fails loudly.
   */
  async createRepository(name: string, options: { defaultBranch?: string } = {}): Promise<string> {
    const path = this.repositoryPath(name);
    await mkdir(dirname(path), { recursive: true });
    await git(["init", "--bare", "--quiet", `--initial-branch=${options.defaultBranch ?? "main"}`, path]);
    await git(["config", "receive.denyNonFastForwards", "true"], { cwd: path });
    // Partial clones, as the Git hosts serve them.
    await git(["config", "uploadpack.allowFilter", "true"], { cwd: path });
    // No gc after each push: a test's repository stays small, and each one is another process.
    await git(["config", "receive.autogc", "false"], { cwd: path });
    return this.repositoryUrl(name);
  }

  /**
   * Records every push the repository receives from here on (pushes()): its push options, which
   * the server now advertises (receive.advertisePushOptions), and its ref updates. With
   * `reviewRefs`, a push to refs/for/... is taken as a review request, as Gerrit and Gitea's
   * AGit flow take it: accepted every time, and kept as refs/changes/<n>, never under its name.
   */
  async recordPushes(repository: string, options: { reviewRefs?: boolean } = {}): Promise<void> {
    const path = this.repositoryPath(repository);
    await git(["config", "receive.advertisePushOptions", "true"], { cwd: path });
    const hook = join(path, "hooks", "post-receive");
    await mkdir(dirname(hook), { recursive: true });
    await writeFile(hook, recordingHook(options.reviewRefs ?? false));
    await chmod(hook, 0o755);
  }

  /** Every push recordPushes has recorded in the repository, oldest first. */
  async pushes(repository: string): Promise<RecordedPush[]> {
    const log = await readFile(join(this.repositoryPath(repository), pushLog), "utf8").catch(() => "");
    const pushes: RecordedPush[] = [];
    let current: RecordedPush | undefined;
    for (const line of log.split("\n")) {
      const [kind, ...fields] = line.split("\t");
      if (kind === "push") current = { options: [], refs: [] };
      else if (kind === "option" && current) current.options.push(fields.join("\t"));
      else if (kind === "ref" && current)
        current.refs.push({ old: fields[0]!, new: fields[1]!, ref: fields[2]! });
      else if (kind === "end" && current) {
        pushes.push(current);
        current = undefined;
      }
    }
    return pushes;
  }

  /** The commit a branch points at on the server, or undefined if the branch does not exist. */
  async branchHead(repository: string, branch: string): Promise<string | undefined> {
    try {
      return await git(["rev-parse", "--verify", "--quiet", `refs/heads/${branch}`], {
        cwd: this.repositoryPath(repository),
      });
    } catch {
      return undefined;
    }
  }

  /** The files a branch holds under `folder`, as paths from the repository root. */
  async listFiles(repository: string, branch: string, folder: string): Promise<string[]> {
    const listing = await this.gitIn(repository, [
      "ls-tree",
      "-r",
      "--name-only",
      branch,
      "--",
      `${folder}/`,
    ]);
    return listing.split("\n").filter((p) => p !== "");
  }

  /** Runs a git command inside the bare repository, for assertions on what was pushed. */
  async gitIn(repository: string, args: string[]): Promise<string> {
    return git(args, { cwd: this.repositoryPath(repository) });
  }

  /** A file's exact bytes at `ref`, or undefined where the ref or the file does not exist. */
  async fileAt(repository: string, ref: string, path: string): Promise<string | undefined> {
    return git(["show", `${ref}:${path}`], { cwd: this.repositoryPath(repository), raw: true }).catch(
      () => undefined,
    );
  }

  /**
   * Each `ref:path`'s exact bytes, or undefined where it does not exist, read by one
   * `git cat-file --batch`: a wait over sixty files spawned sixty git processes per look.
   */
  async filesAt(repository: string, objects: readonly string[]): Promise<(string | undefined)[]> {
    if (objects.length === 0) return [];
    const child = spawn("git", ["cat-file", "--batch"], {
      cwd: this.repositoryPath(repository),
      env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" },
      stdio: ["pipe", "pipe", "ignore"],
    });
    const chunks: Buffer[] = [];
    child.stdout.on("data", (chunk: Buffer) => chunks.push(chunk));
    const exited = new Promise<number | null>((resolve, reject) => {
      child.on("error", reject);
      child.on("close", resolve);
    });
    child.stdin.end(objects.map((o) => `${o}\n`).join(""));
    const code = await exited;
    if (code !== 0) throw new Error(`git cat-file --batch exited ${code}`);
    return parseBatch(Buffer.concat(chunks), objects.length);
  }

  /**
   * Every version of `path` on `branch` from `commit` on, oldest first, as [commit, content]:
   * what a test reads to show Git never went back after a push. `commit` must have changed it.
   */
  async versionsSince(
    repository: string,
    commit: string,
    path: string,
    branch = "main",
  ): Promise<[string, string][]> {
    const log = await this.gitIn(repository, [
      "log",
      "--reverse",
      "--format=%H",
      `${commit}^..${branch}`,
      "--",
      path,
    ]);
    const commits = log
      .trim()
      .split("\n")
      .filter((c) => c !== "");
    if (commits[0] !== commit) throw new Error(`${commit} did not change ${path} on ${branch}`);
    return Promise.all(
      commits.map(async (c): Promise<[string, string]> => [
        c,
        (await this.fileAt(repository, c, path)) ?? "",
      ]),
    );
  }

  /**
   * Pushes a commit made by somebody else, with the real git CLI over HTTP (on an HTTPS server,
   * straight into the repository), the way a person or CI would, and returns its hash.
   */
  async pushForeignCommit(repository: string, commit: ForeignCommit): Promise<string> {
    const branch = commit.branch ?? "main";
    const user = commit.as ?? [...this.users.values()].find((u) => (u.access ?? "write") === "write");
    if (!user) throw new Error("pushForeignCommit needs a user with write access");
    const url = new URL(this.repositoryUrl(repository));
    url.username = encodeURIComponent(user.username);
    url.password = encodeURIComponent(user.password);
    const work = await mkdtemp(join(this.root, "foreign-"));
    const author = commit.author ?? { name: "Foreign Author", email: "foreign@example.com" };
    const env = {
      GIT_AUTHOR_NAME: author.name,
      GIT_AUTHOR_EMAIL: author.email,
      GIT_COMMITTER_NAME: author.name,
      GIT_COMMITTER_EMAIL: author.email,
    };
    try {
      await git(["init", "--quiet", work]);
      // Over HTTPS the foreign pusher has no certificate to show: it pushes on the server's disk.
      const remote = this.tls ? this.repositoryPath(repository) : url.toString();
      await git(["remote", "add", "origin", remote], { cwd: work });
      const start = (await this.branchHead(repository, branch)) ? branch : commit.startFrom;
      if (start) {
        await git(["fetch", "--quiet", "origin", `refs/heads/${start}`], { cwd: work });
        await git(["checkout", "--quiet", "-B", branch, "FETCH_HEAD"], { cwd: work });
      } else {
        await git(["checkout", "--quiet", "--orphan", branch], { cwd: work });
      }
      const change = async () => {
        for (const [path, content] of Object.entries(commit.files)) {
          if (content === null) {
            await git(["rm", "--quiet", "-r", "--", path], { cwd: work });
            continue;
          }
          const text =
            typeof content === "function"
              ? content(await readFile(join(work, path), "utf8").catch(() => undefined))
              : content;
          await mkdir(dirname(join(work, path)), { recursive: true });
          await writeFile(join(work, path), text);
          await git(["add", "--", path], { cwd: work });
        }
        await git(["commit", "--quiet", "--allow-empty", "-m", commit.message ?? "A foreign commit"], {
          cwd: work,
          env,
        });
      };
      await change();
      const redone = Object.values(commit.files).some((content) => typeof content === "function");
      // As a person does when the operator pushed in between: fetch, rebase onto it (or make the
      // change again on it), push again.
      for (let attempt = 1; ; attempt++) {
        try {
          await git(["push", "--quiet", "origin", `HEAD:refs/heads/${branch}`], { cwd: work });
          break;
        } catch (err) {
          if (attempt >= 5 || !start) throw err;
          await git(["fetch", "--quiet", "origin", `refs/heads/${branch}`], { cwd: work });
          if (!redone) {
            await git(["rebase", "--quiet", "FETCH_HEAD"], { cwd: work, env });
            continue;
          }
          await git(["reset", "--quiet", "--hard", "FETCH_HEAD"], { cwd: work });
          await change();
        }
      }
      return await git(["rev-parse", "HEAD"], { cwd: work });
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }

  /**
   * Runs `action` after the next push's ref advertisement and before its pack is received,
   * once. A foreign push made here moves the branch under a client that already read the
   * advertisement, so its update meets the server's compare-and-swap.
   */
  interceptNextPush(action: () => Promise<unknown>): void {
    this.beforeNextPush = action;
  }

  /** Starts serving, on the port it had before if it had one. */
  async start(): Promise<void> {
    if (this.server) return;
    const handle = (req: IncomingMessage, res: ServerResponse) => this.handle(req, res);
    const tls = this.tls;
    const server: Server = tls
      ? createTlsServer(
          {
            cert: tls.cert,
            key: tls.key,
            ...(tls.clientCa ? { ca: tls.clientCa, requestCert: true, rejectUnauthorized: true } : {}),
          },
          handle,
        )
      : createServer(handle);
    server.on("connection", (socket: Socket) => {
      this.sockets.add(socket);
      socket.once("close", () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.listenPort, this.host, () => resolve());
    });
    const address = server.address();
    if (address && typeof address === "object") this.listenPort = address.port;
    this.server = server;
  }

  /** Stops serving and drops open connections, keeping the repositories: an outage. */
  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Stops serving and removes every repository. */
  async close(): Promise<void> {
    await this.stop();
    removeOwnedTempDir(this.root);
  }

  private authenticate(req: IncomingMessage): GitUser | undefined {
    const header = req.headers.authorization;
    const bearer = header ? /^Bearer\s+(\S+)$/i.exec(header)?.[1] : undefined;
    if (bearer) return [...this.users.values()].find((u) => u.bearerToken === bearer);
    const credentials = parseBasicAuth(header);
    if (credentials) {
      const user = this.users.get(credentials.username);
      if (user && user.password === credentials.password) return user;
      const name = this.checkPassword?.(credentials.username, credentials.password);
      return name === undefined ? undefined : { username: name, password: "" };
    }
    return this.clientCertificateUser(req);
  }

  /** The user a verified client certificate names by its common name, on an HTTPS server. */
  private clientCertificateUser(req: IncomingMessage): GitUser | undefined {
    const socket = req.socket as Partial<TLSSocket>;
    if (!socket.authorized || !socket.getPeerCertificate) return undefined;
    const commonName = socket.getPeerCertificate().subject?.CN;
    return typeof commonName === "string" ? this.users.get(commonName) : undefined;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? "/", this.baseUrl);
    const service = gitServiceOf(url.pathname, url.searchParams);
    const repository = url.pathname.replace(/^\//, "").split(".git/")[0] ?? "";
    const user = this.authenticate(req);
    const record: GitRequestRecord = {
      method: req.method ?? "GET",
      repository,
      service,
      advertisement: url.pathname.endsWith("/info/refs"),
      username: user?.username,
      status: 0,
    };
    this.requests.push(record);
    res.once("finish", () => (record.status = res.statusCode));

    if (!user) {
      res.writeHead(401, { "WWW-Authenticate": 'Basic realm="gitops-reverser-testenv"' }).end();
      return;
    }
    if (service === "receive-pack" && (user.access ?? "write") !== "write") {
      res.writeHead(403, { "Content-Type": "text/plain" }).end(`${user.username} may not push\n`);
      return;
    }
    const intercept = service === "receive-pack" && !record.advertisement ? this.beforeNextPush : undefined;
    if (!intercept) {
      this.runBackend(req, res, url, user);
      return;
    }
    this.beforeNextPush = undefined;
    intercept().then(
      () => this.runBackend(req, res, url, user),
      (err: unknown) =>
        res
          .writeHead(500, { "Content-Type": "text/plain" })
          .end(`interceptNextPush failed: ${String(err)}\n`),
    );
  }

  private runBackend(req: IncomingMessage, res: ServerResponse, url: URL, user: GitUser): void {
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: this.root,
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_PROJECT_ROOT: join(this.root, "repositories"),
      GIT_HTTP_EXPORT_ALL: "1",
      REQUEST_METHOD: req.method,
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.replace(/^\?/, ""),
      CONTENT_TYPE: req.headers["content-type"] ?? "",
      REMOTE_USER: user.username,
      REMOTE_ADDR: req.socket.remoteAddress ?? "127.0.0.1",
      SERVER_PROTOCOL: "HTTP/1.1",
      ...(req.headers["content-length"] ? { CONTENT_LENGTH: req.headers["content-length"] } : {}),
      ...(req.headers["content-encoding"] ? { HTTP_CONTENT_ENCODING: req.headers["content-encoding"] } : {}),
      ...(req.headers["git-protocol"] ? { GIT_PROTOCOL: String(req.headers["git-protocol"]) } : {}),
    };
    const backend = spawn(httpBackend, [], { env, stdio: ["pipe", "pipe", "pipe"] });
    let head: Buffer = Buffer.alloc(0);
    let headDone = false;
    const stderr: Buffer[] = [];
    backend.stderr.on("data", (chunk: Buffer) => stderr.push(chunk));
    backend.stdout.on("data", (chunk: Buffer) => {
      if (headDone) {
        res.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const parsed = parseCgiHead(head);
      if (!parsed) return;
      headDone = true;
      res.writeHead(parsed.status, parsed.statusText, parsed.headers.flat());
      res.write(head.subarray(parsed.bodyOffset));
    });
    backend.on("close", (code) => {
      if (!headDone) {
        const message = Buffer.concat(stderr).toString() || `git http-backend exited with ${code}`;
        if (!res.headersSent) res.writeHead(500, { "Content-Type": "text/plain" });
        res.end(message);
        return;
      }
      res.end();
    });
    backend.stdin.on("error", () => undefined);
    req.pipe(backend.stdin);
  }
}

/**
 * `git cat-file --batch`'s answers, one per object asked: "<oid> <type> <size>" then the bytes
 * and a newline, or "<object> missing" (or "ambiguous") alone.
 */
export function parseBatch(out: Buffer, count: number): (string | undefined)[] {
  const found: (string | undefined)[] = [];
  let at = 0;
  while (found.length < count && at < out.length) {
    const end = out.indexOf(0x0a, at);
    const header = out.subarray(at, end).toString("utf8").split(" ");
    at = end + 1;
    const size = header.length === 3 ? Number(header[2]) : NaN;
    if (Number.isNaN(size)) {
      found.push(undefined);
      continue;
    }
    found.push(out.subarray(at, at + size).toString("utf8"));
    at += size + 1;
  }
  return found;
}
