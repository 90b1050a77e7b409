// Operator processes as replicas run them: each its own process (so a test can SIGKILL it),
// with attribution on the redis transport, one control plane auditing to the first replica's
// audit ingress, one Git server and one Redis. alice and bob edit ConfigMaps of one namespace,
// mirrored by the GitTarget "configs" through the GitBranch "main", whose commit window is long
// enough to be open when a process dies. Shared by the durable-queue and standby tests.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { basename, join } from "node:path";
import { CoordinationV1Api, CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { writeLogKey } from "../../internal/redis/writelog.ts";
import { cursorKeyPrefix } from "../../internal/redis/cursors.ts";
import {
  gitBranches,
  gitProviders,
  gitReceivers,
  gitTargets,
  watchRules,
} from "../../generated/v1alpha3/index.ts";
import { RedisConnection } from "../../internal/redis/connection.ts";
import type { LeaseTimings } from "../../internal/operator/leaderelection.ts";
import { attributionEnv, grantEditing, writeValue, type AttributionEnv } from "./attributionenv.ts";
import { ControlPlane, type TestIdentity } from "./controlplane.ts";
import { GitServer } from "./gitserver.ts";
import { keepCopy, keptFolder } from "./keeplogs.ts";
import { quiet } from "./logger.ts";
import { installCrds } from "./manifests.ts";
import { applyMirror, grantAllSourceNamespaces, mirrorFieldManager, mirrorGitTarget } from "./mirror.ts";
import { operatorNamespace, shippedOperatorIdentity } from "./shippedrbac.ts";
import { startOperatorProcess, type OperatorProcess } from "./operator.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "./reaper.ts";
import { RedisServer } from "./redis.ts";
import { eventually } from "./wait.ts";

export const replicaNamespace = "team-q";
const folder = "clusters/dev";
export const gitUser = { username: "gitops", password: "s3cret" };

/** One replica's process, and what a test reaches it by. */
export interface Replica extends OperatorProcess {
  /** Its Lease identity, read from its first log line. */
  identity(): string;
  /** Its push receiver, with `receiver`. */
  receiverPort?: number;
}

export interface ReplicaOptions {
  /** One of this many replicas (--replica-count, leader election on): they share the branches out. */
  replicas?: number;
  /** Serve the audit ingress on the port the control plane audits to; another port otherwise. */
  audited?: boolean;
  /** Serve the push receiver on a free port. */
  receiver?: boolean;
  /** Its worker root, under the environment's directory: replicas are pods, with roots of their own. */
  workers?: string;
  /** The kubeconfig it reaches the API server with (through a proxy a test controls); the operator's own by default. */
  kubeconfigPath?: string;
  /** Its Lease timings (with replicas above one); `replicaLeaseTimings` by default. */
  leaseTimings?: LeaseTimings;
}

/**
 * The Lease timings replicas run with here, shorter than the shipped 15s, 10s and 2s
 * (--leader-election-*): a failover's wait is mostly the lease duration, and the rules these
 * tests hold (nothing lost, no author lost, nothing goes back) do not depend on its length. A
 * test of the timings themselves (the partition test) runs the shipped ones.
 */
export const replicaLeaseTimings: LeaseTimings = {
  leaseDurationMs: 8_000,
  renewDeadlineMs: 6_000,
  retryPeriodMs: 1_000,
};

export class ReplicaEnvironment {
  readonly replicas: Replica[] = [];
  private readonly stopQueue = new AbortController();

  private constructor(
    readonly dir: string,
    readonly env: AttributionEnv,
    readonly plane: ControlPlane,
    readonly git: GitServer,
    public redis: RedisServer,
    readonly connection: RedisConnection,
    readonly kc: KubeConfig,
    readonly alice: TestIdentity,
    readonly bob: TestIdentity,
    /** The operator's ServiceAccount under config/rbac's roles, as a user installs it: every replica's identity. */
    readonly operatorKubeconfigPath: string,
  ) {}

  static async start(): Promise<ReplicaEnvironment> {
    const namespace = replicaNamespace;
    const dir = makeOwnedTempDir("replicas");
    const env = await attributionEnv(dir);
    const certs = join(dir, "audit-certs");
    mkdirSync(certs);
    const { tls } = env.settings().ingress;
    writeFileSync(join(certs, "tls.crt"), tls!.cert);
    writeFileSync(join(certs, "tls.key"), tls!.key);
    writeFileSync(join(certs, "ca.crt"), tls!.ca);
    const [plane, git, redis] = await Promise.all([
      ControlPlane.start({ audit: env.webhook(`${namespace}.self`) }),
      GitServer.start({ users: [gitUser] }),
      RedisServer.start(),
    ]);
    const connection = new RedisConnection(redis.address, quiet);
    const kc = plane.kubeConfig();
    await installCrds(kc);
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
    const url = await git.createRepository("state");
    // A long idle timeout: the window a test writes into is still open when a process dies.
    await applyMirror(kc, namespace, url, gitUser, [
      {
        name: "configs",
        path: folder,
        rules: [{ apiGroups: [""], resources: ["configmaps"] }],
        idleTimeout: "60s",
        maxDuration: "5m",
      },
    ]);
    const [alice, bob] = [await plane.mintUser("alice"), await plane.mintUser("bob")];
    await grantEditing(kc, namespace, [
      { kind: "User", name: "alice", apiGroup: "rbac.authorization.k8s.io" },
      { kind: "User", name: "bob", apiGroup: "rbac.authorization.k8s.io" },
    ]);
    const { kubeconfigPath } = await shippedOperatorIdentity(plane, kc);
    const environment = new ReplicaEnvironment(
      dir,
      env,
      plane,
      git,
      redis,
      connection,
      kc,
      alice,
      bob,
      kubeconfigPath,
    );
    void connection.start(environment.stopQueue.signal);
    return environment;
  }

  /** An operator process with attribution on the redis transport, as a replica runs it. */
  async startReplica(options: ReplicaOptions = {}): Promise<Replica> {
    const { replicas = 1, audited = true, receiver = false, workers = "workers" } = options;
    const logDir = join(this.dir, `replica-${this.replicas.length}`);
    mkdirSync(logDir);
    // The audited replica serves the port kube-apiserver posts to; any other binds port 0.
    const auditPort = audited ? this.env.port : 0;
    const started = startOperatorProcess(options.kubeconfigPath ?? this.operatorKubeconfigPath, logDir, [
      "--author-attribution=true",
      "--author-attribution-transport=redis",
      "--author-attribution-grace=10s",
      `--redis-addr=${this.redis.address}`,
      `--audit-bind-address=127.0.0.1:${auditPort}`,
      `--audit-cert-dir=${join(this.dir, "audit-certs")}`,
      `--in-cluster-kube-providers=${replicaNamespace}/self`,
      `--worker-root=${join(this.dir, workers)}`,
      "--metrics-secure=false",
      ...(replicas > 1
        ? [
            "--leader-elect=true",
            `--leader-election-namespace=${operatorNamespace}`,
            `--replica-count=${replicas}`,
            ...leaseTimingFlags(options.leaseTimings ?? replicaLeaseTimings),
          ]
        : []),
      ...(receiver ? ["--receiver-bind-address=127.0.0.1:0"] : []),
    ]);
    const receiverPort = receiver ? await started.port("push notices") : undefined;
    const probePort = await started.port("probes");
    const replica: Replica = {
      ...started,
      ...(receiverPort ? { receiverPort } : {}),
      identity: () => identityIn(started.logFile),
    };
    this.replicas.push(replica);
    // Ready: its informers listed, Redis answered, its audit ingress serves. A replica that
    // takes the audit port must serve it before anyone writes, or their facts are lost.
    await eventually(
      async () => {
        started.process.assertRunning();
        const answer = await fetch(`http://127.0.0.1:${probePort}/readyz`).catch(() => undefined);
        return answer?.status === 200;
      },
      {
        timeoutMs: 60_000,
        description: () => `replica ${this.replicas.length - 1} ready:\n${started.process.logTail()}`,
      },
    );
    return replica;
  }

  /** Resolves once the GitTarget "configs" is Ready: its snapshot is in Git, and what follows is live. */
  async targetReady(): Promise<void> {
    await eventually(
      async () => {
        const target = await gitTargets(this.kc).get(replicaNamespace, "configs");
        return target?.status?.conditions?.find((c) => c.type === "Ready")?.status === "True";
      },
      {
        timeoutMs: 90_000,
        description: () => `the GitTarget configs Ready; last lines:\n${this.logTails()}`,
      },
    );
  }

  /** The identity holding the operator's leader Lease, if any. */
  async leader(): Promise<string | undefined> {
    const lease = await this.kc
      .makeApiClient(CoordinationV1Api)
      .readNamespacedLease({ namespace: operatorNamespace, name: "gitops-reverser-leader" })
      .catch(() => undefined);
    return lease?.spec?.holderIdentity;
  }

  /**
   * A GitReceiver "hook" of the generic type, with its token in the Secret "hook": resolves to
   * its webhookPath once the leader has written it.
   */
  async receiver(token: string): Promise<string> {
    await this.kc.makeApiClient(CoreV1Api).createNamespacedSecret({
      namespace: replicaNamespace,
      body: { metadata: { name: "hook" }, stringData: { token } },
    });
    await gitReceivers(this.kc).apply(
      {
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "GitReceiver",
        metadata: { name: "hook", namespace: replicaNamespace },
        spec: { type: "generic-hmac", secretRef: { name: "hook" } },
      },
      mirrorFieldManager,
    );
    let path = "";
    await eventually(
      async () => {
        path = (await gitReceivers(this.kc).get(replicaNamespace, "hook"))?.status?.webhookPath ?? "";
        return path !== "";
      },
      { timeoutMs: 30_000, description: "the GitReceiver's webhookPath, written by the leader" },
    );
    return path;
  }

  /** Writes `value` into the ConfigMap `name` as `who`. */
  write(who: TestIdentity, name: string, value: string): Promise<void> {
    return writeValue(who.kubeConfig, replicaNamespace, name, value);
  }

  /**
   * alice creates and edits the ConfigMaps `mine` (v1, then v2); bob's first write closes her
   * window, and his own (`his`, v1 then v2) stays open, with every value in the durable queue
   * and none of bob's in Git yet. Resolves to the ConfigMaps of bob's that Git already holds:
   * none, or the window was not open.
   */
  async openWindows(mine: string[], his: string[]): Promise<string[]> {
    for (const value of ["v1", "v2"]) for (const name of mine) await this.write(this.alice, name, value);
    for (const value of ["v1", "v2"]) for (const name of his) await this.write(this.bob, name, value);
    await eventually(
      async () => {
        const values = await this.queued();
        return his.every((name) => values.get(name)?.at(-1) === "v2");
      },
      { timeoutMs: 60_000, description: "bob's last values in the durable queue" },
    );
    const inGit = await this.showAll(his.map((name) => ({ path: this.fileOf(name) })));
    return his.filter((_, i) => inGit[i] !== undefined);
  }

  /** Whether every one of `names` is at v2 in Git. */
  async allAtV2(names: string[]): Promise<boolean> {
    const contents = await this.showAll(names.map((name) => ({ path: this.fileOf(name) })));
    return contents.every((content) => content?.includes("k: v2") === true);
  }

  /** The values a GitBranch's durable queue holds, by ConfigMap name: every entry's, in order. */
  async queued(gitBranch = "main"): Promise<Map<string, string[]>> {
    const values = new Map<string, string[]>();
    for (const { name, value } of await this.queuedEntries(gitBranch))
      values.set(name, [...(values.get(name) ?? []), value]);
    return values;
  }

  /**
   * Each entry of a GitBranch's durable queue: its ConfigMap, value, author's username and the
   * event's resourceVersion.
   */
  async queuedEntries(
    gitBranch = "main",
  ): Promise<{ name: string; value: string; author?: string; resourceVersion?: string }[]> {
    const key = writeLogKey(`${replicaNamespace}/${gitBranch}`);
    const entries = await this.connection.client.xrange(key, "-", "+");
    return entries.map(([, fields]) => {
      const { item } = JSON.parse(fields[1]!) as {
        item: {
          identity: { name: string };
          object?: { data?: { k?: string } };
          author?: { username?: string };
          resourceVersion?: string;
        };
      };
      return {
        name: item.identity.name,
        value: item.object?.data?.k ?? "",
        ...(item.author?.username ? { author: item.author.username } : {}),
        ...(item.resourceVersion ? { resourceVersion: item.resourceVersion } : {}),
      };
    });
  }

  /**
   * Moves every stored resume cursor back to `resourceVersion`, as a process killed before its
   * cursor saves (written behind) reached Redis leaves them: the next watch delivers again every
   * event after it. Returns how many cursors it moved.
   */
  async rewindCursors(resourceVersion: string): Promise<number> {
    const keys = await this.connection.client.keys(`${cursorKeyPrefix}*`);
    for (const key of keys) await this.connection.client.set(key, resourceVersion, "KEEPTTL");
    return keys.length;
  }

  /**
   * Resolves once an edit alice makes now is attributed: after the audited replica restarted,
   * the API server's audit webhook may still be backing off from the port that went away, and
   * an edit before it delivers again would outwait the attribution grace.
   */
  async auditFlowing(probe: string): Promise<void> {
    await this.write(this.alice, probe, "probe");
    await eventually(
      async () =>
        (await this.queuedEntries()).some((e) => e.name === probe && e.author === "alice") ||
        (await this.authorsOf(this.fileOf(probe))).includes("alice"),
      { timeoutMs: 60_000, description: `alice's probe ${probe} attributed` },
    );
  }

  /** The file of the ConfigMap `name` in Git. */
  fileOf(name: string): string {
    return `${folder}/${replicaNamespace}/configmaps/${name}.yaml`;
  }

  /**
   * Shares the repository out: `count` more repository branches (b-00, b-01, …), each written
   * by a GitBranch and a GitTarget of the same number in team-q, whose WatchRule follows the
   * ConfigMaps of a source namespace of its own (s00, s01, …), which alice and bob may edit.
   * Every window stays open 20 s after its last write: open when a process a test stops or kills
   * right after writing dies, and closed soon after a test's last round, so its push is not
   * waited for long (the first target's, which tests leave open for minutes, is 60 s).
   */
  async addBranches(count: number): Promise<void> {
    const apiVersion = "configbutler.ai/v1alpha3" as const;
    const namespace = replicaNamespace;
    // A new branch starts from the remote's default one, which must have a commit by then.
    if (!(await this.git.branchHead("state", "main")))
      await this.git.pushForeignCommit("state", { files: { "README.md": "state\n" }, message: "Start" });
    await gitProviders(this.kc).apply(
      {
        apiVersion,
        kind: "GitProvider",
        metadata: { name: "state", namespace },
        spec: {
          url: this.git.repositoryUrl("state"),
          secretRef: { name: "git" },
          allowedGitBranches: [{ consumerNamespaces: { from: "Same" }, branches: ["main", "b-*"] }],
        },
      },
      mirrorFieldManager,
    );
    await grantAllSourceNamespaces(this.kc, namespace);
    const core = this.kc.makeApiClient(CoreV1Api);
    await Promise.all(
      Array.from({ length: count }, async (_, i) => {
        const { branch, source, target } = shardNames(i);
        await core.createNamespace({ body: { metadata: { name: source } } });
        await grantEditing(this.kc, source, [
          { kind: "User", name: "alice", apiGroup: "rbac.authorization.k8s.io" },
          { kind: "User", name: "bob", apiGroup: "rbac.authorization.k8s.io" },
        ]);
        await gitBranches(this.kc).apply(
          {
            apiVersion,
            kind: "GitBranch",
            metadata: { name: branch, namespace },
            spec: { gitProviderRef: { name: "state" }, branch },
          },
          mirrorFieldManager,
        );
        const spec = mirrorGitTarget(namespace, {
          name: target,
          path: `shards/${source}`,
          rules: [],
          idleTimeout: "20s",
          maxDuration: "5m",
        });
        spec.spec.gitBranchRef = { name: branch };
        await gitTargets(this.kc).apply(spec, mirrorFieldManager);
        await watchRules(this.kc).apply(
          {
            apiVersion,
            kind: "WatchRule",
            metadata: { name: target, namespace },
            spec: {
              gitTargetRef: { name: target },
              rules: [{ apiGroups: [""], resources: ["configmaps"], sourceNamespace: source }],
            },
          },
          mirrorFieldManager,
        );
      }),
    );
  }

  /** Writes `value` into the ConfigMap `name` of shard `i`'s source namespace as `who`. */
  writeIn(i: number, who: TestIdentity, name: string, value: string): Promise<void> {
    return writeValue(who.kubeConfig, shardNames(i).source, name, value);
  }

  /** The file of the ConfigMap `name` of shard `i`, and the branch it is written on. */
  shardFile(i: number, name: string): { path: string; branch: string } {
    const { branch, source } = shardNames(i);
    return { path: `shards/${source}/${source}/configmaps/${name}.yaml`, branch };
  }

  /** `path` on `branch`, or undefined while Git does not have it. */
  show(path: string, branch = "main"): Promise<string | undefined> {
    return this.git.gitIn("state", ["show", `${branch}:${path}`]).catch(() => undefined);
  }

  /** Each file's content on its branch (undefined while Git does not have it), read at once. */
  showAll(files: readonly { path: string; branch?: string }[]): Promise<(string | undefined)[]> {
    return this.git.filesAt(
      "state",
      files.map(({ path, branch = "main" }) => `${branch}:${path}`),
    );
  }

  /** The author of every commit that touched `path`, newest first. */
  async authorsOf(path: string, branch = "main"): Promise<string[]> {
    return (await this.git.gitIn("state", ["log", "--format=%an", branch, "--", path]))
      .split("\n")
      .filter(Boolean);
  }

  /** The value of `k` each commit that touched `path` left, with its author, oldest first. */
  async valuesOf(path: string, branch = "main"): Promise<{ author: string; value: string }[]> {
    const log = await this.git.gitIn("state", [
      "log",
      "--reverse",
      "--format=author: %an",
      "-p",
      branch,
      "--",
      path,
    ]);
    const history: { author: string; value: string }[] = [];
    for (const line of log.split("\n")) {
      if (line.startsWith("author: ")) history.push({ author: line.slice("author: ".length), value: "" });
      const added = /^\+\s+k: (.*)$/.exec(line);
      if (added && history.length > 0) history.at(-1)!.value = added[1]!;
    }
    return history;
  }

  /** How many commits on `branch` `author` made. */
  async commitsBy(author: string, branch = "main"): Promise<number> {
    // A branch nothing was written to yet does not exist.
    const authors = await this.git.gitIn("state", ["log", "--format=%an", branch]).catch(() => "");
    return authors.split("\n").filter((name) => name === author).length;
  }

  /** The commits that touched any of `paths`. */
  async commitsTouching(paths: string[]): Promise<string[]> {
    return (await this.git.gitIn("state", ["log", "--format=%H", "main", "--", ...paths]))
      .split("\n")
      .filter(Boolean);
  }

  /** The last log lines of every replica, for a timeout's description. */
  logTails(): string {
    return this.replicas.map((r, i) => `replica ${i}:\n${r.process.logTail(15)}`).join("\n");
  }

  async stop(): Promise<void> {
    for (const replica of this.replicas) await replica.process.stop();
    this.stopQueue.abort();
    // Every replica's log and the repository, to read after a failure (KEEP_TEST_LOGS).
    const name = basename(this.dir);
    keepCopy(name, this.dir, ".", (src) => !src.includes("workers"));
    if (keptFolder(name)) keepCopy(name, this.git.repositoryPath("state"), "state.git");
    await this.git.close();
    await this.plane.stop();
    await this.redis.stop();
    removeOwnedTempDir(this.dir);
  }
}

/** Posts a push delivery to a replica's receiver on loopback; resolves to the status code. */
export function postDelivery(
  port: number,
  path: string,
  delivery: { body: string; headers: Record<string, string> },
): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const headers = { ...delivery.headers, "content-length": String(Buffer.byteLength(delivery.body)) };
    const req = request({ host: "127.0.0.1", port, path, method: "POST", headers }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
    req.end(delivery.body);
  });
}

/** Shard `i`'s repository branch (and GitBranch), source namespace and GitTarget. */
export function shardNames(i: number): { branch: string; source: string; target: string } {
  const n = String(i).padStart(2, "0");
  return { branch: `b-${n}`, source: `s${n}`, target: `t-${n}` };
}

/** The identity the process logged it starts as. */
function identityIn(logFile: string): string {
  for (const line of readFileSync(logFile, "utf8").split("\n")) {
    if (!line.startsWith("{")) continue;
    const entry = JSON.parse(line) as { message?: string; identity?: string };
    if (entry.message === "starting" && entry.identity) return entry.identity;
  }
  return "";
}

/** The --leader-election-* flags that give `timings`. */
function leaseTimingFlags(timings: LeaseTimings): string[] {
  return [
    `--leader-election-lease-duration=${timings.leaseDurationMs}ms`,
    `--leader-election-renew-deadline=${timings.renewDeadlineMs}ms`,
    `--leader-election-retry-period=${timings.retryPeriodMs}ms`,
  ];
}
