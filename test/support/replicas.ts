// Operator processes as replicas run them: each its own process (so a test can SIGKILL it),
// with attribution on the redis transport, one control plane auditing to the first replica's
// audit ingress, one Git server and one Redis. alice and bob edit ConfigMaps of one namespace,
// mirrored by the GitTarget "configs" through the GitBranch "main", whose commit window is long
// enough to be open when a process dies. Shared by the durable-queue and standby tests.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CoordinationV1Api, CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { writeLogKey } from "../../internal/redis/writelog.ts";
import { gitTargets } from "../../generated/v1alpha3/index.ts";
import { RedisConnection } from "../../internal/redis/connection.ts";
import { attributionEnv, grantEditing, type AttributionEnv } from "./attributionenv.ts";
import { ControlPlane, type TestIdentity } from "./controlplane.ts";
import { GitServer } from "./gitserver.ts";
import { quiet } from "./logger.ts";
import { installCrds } from "./manifests.ts";
import { applyMirror } from "./mirror.ts";
import { startOperatorProcess, type OperatorProcess } from "./operator.ts";
import { freePort } from "./ports.ts";
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
  /** Stand by on the leader Lease, with --replica-count=2. */
  standby?: boolean;
  /** Serve the audit ingress on the port the control plane audits to; another port otherwise. */
  audited?: boolean;
  /** Serve the push receiver on a free port. */
  receiver?: boolean;
  /** Its worker root, under the environment's directory: replicas are pods, with roots of their own. */
  workers?: string;
}

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
    const environment = new ReplicaEnvironment(dir, env, plane, git, redis, connection, kc, alice, bob);
    void connection.start(environment.stopQueue.signal);
    return environment;
  }

  /** An operator process with attribution on the redis transport, as a replica runs it. */
  async startReplica(options: ReplicaOptions = {}): Promise<Replica> {
    const { standby = false, audited = true, receiver = false, workers = "workers" } = options;
    const logDir = join(this.dir, `replica-${this.replicas.length}`);
    mkdirSync(logDir);
    const auditPort = audited ? this.env.port : await freePort();
    const receiverPort = receiver ? await freePort() : undefined;
    const started = await startOperatorProcess(this.plane.kubeconfigPath, logDir, [
      "--author-attribution=true",
      "--author-attribution-transport=redis",
      "--author-attribution-grace=10s",
      `--redis-addr=${this.redis.address}`,
      `--audit-bind-address=127.0.0.1:${auditPort}`,
      `--audit-cert-dir=${join(this.dir, "audit-certs")}`,
      `--in-cluster-kube-providers=${replicaNamespace}/self`,
      `--worker-root=${join(this.dir, workers)}`,
      "--metrics-secure=false",
      ...(standby ? ["--leader-elect=true", "--leader-election-namespace=default", "--replica-count=2"] : []),
      ...(receiverPort ? [`--receiver-bind-address=127.0.0.1:${receiverPort}`] : []),
    ]);
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
        const answer = await fetch(`http://127.0.0.1:${started.probePort}/readyz`).catch(() => undefined);
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
      .readNamespacedLease({ namespace: "default", name: "gitops-reverser-leader" })
      .catch(() => undefined);
    return lease?.spec?.holderIdentity;
  }

  /** Writes `value` into the ConfigMap `name` as `who`. */
  async write(who: TestIdentity, name: string, value: string): Promise<void> {
    const core = who.kubeConfig.makeApiClient(CoreV1Api);
    await core
      .createNamespacedConfigMap({
        namespace: replicaNamespace,
        body: { metadata: { name }, data: { k: value } },
      })
      .catch(() =>
        core.patchNamespacedConfigMap({
          namespace: replicaNamespace,
          name,
          body: [{ op: "replace", path: "/data/k", value }],
        }),
      );
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
    const inGit = await Promise.all(
      his.map(async (name) => (await this.show(this.fileOf(name))) !== undefined),
    );
    return his.filter((_, i) => inGit[i]);
  }

  /** Whether every one of `names` is at v2 in Git. */
  async allAtV2(names: string[]): Promise<boolean> {
    for (const name of names) if (!(await this.show(this.fileOf(name)))?.includes("k: v2")) return false;
    return true;
  }

  /** The values the branch's durable queue holds, by ConfigMap name: every entry's, in order. */
  async queued(): Promise<Map<string, string[]>> {
    const key = writeLogKey(`${replicaNamespace}/main`);
    const entries = await this.connection.client.xrange(key, "-", "+");
    const values = new Map<string, string[]>();
    for (const [, fields] of entries) {
      const { item } = JSON.parse(fields[1]!) as {
        item: { identity: { name: string }; object?: { data?: { k?: string } } };
      };
      const name = item.identity.name;
      values.set(name, [...(values.get(name) ?? []), item.object?.data?.k ?? ""]);
    }
    return values;
  }

  /** The file of the ConfigMap `name` in Git. */
  fileOf(name: string): string {
    return `${folder}/${replicaNamespace}/configmaps/${name}.yaml`;
  }

  /** `path` on main, or undefined while Git does not have it. */
  show(path: string): Promise<string | undefined> {
    return this.git.gitIn("state", ["show", `main:${path}`]).catch(() => undefined);
  }

  /** The author of every commit that touched `path`, newest first. */
  async authorsOf(path: string): Promise<string[]> {
    return (await this.git.gitIn("state", ["log", "--format=%an", "main", "--", path]))
      .split("\n")
      .filter(Boolean);
  }

  /** The value of `k` each commit that touched `path` left, with its author, oldest first. */
  async valuesOf(path: string): Promise<{ author: string; value: string }[]> {
    const log = await this.git.gitIn("state", [
      "log",
      "--reverse",
      "--format=author: %an",
      "-p",
      "main",
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

  /** How many commits on main `author` made. */
  async commitsBy(author: string): Promise<number> {
    const authors = await this.git.gitIn("state", ["log", "--format=%an", "main"]);
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
    await this.git.close();
    await this.plane.stop();
    await this.redis.stop();
    removeOwnedTempDir(this.dir);
  }
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
