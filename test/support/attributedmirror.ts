// An attributed mirror, whole: a control plane auditing to the operator's ingress over mTLS, a
// Git server, Redis when the transport is redis, one namespace mirrored into one repository,
// and the operator running with attribution until its GitTarget is Ready. Shared by the
// attribution e2e tests; what each adds (identities, RBAC, an audit policy) stays in the test.
import { randomBytes } from "node:crypto";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { gitTargets, type WatchRule } from "../../generated/v1alpha3/index.ts";
import type { Transport } from "../../internal/attribution/attribution.ts";
import type { FactIndexLimits } from "../../internal/attribution/factindex.ts";
import { attributionEnv, type AttributionEnv } from "./attributionenv.ts";
import { ControlPlane } from "./controlplane.ts";
import { GitServer } from "./gitserver.ts";
import { installCrds } from "./manifests.ts";
import { applyMirror } from "./mirror.ts";
import { startOperator } from "./operator.ts";
import { shippedOperatorIdentity } from "./shippedrbac.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "./reaper.ts";
import { RedisServer, type RedisGuard } from "./redis.ts";
import { createCertificateAuthority, issueCertificate } from "./pki.ts";
import { eventually } from "./wait.ts";

export interface AttributedMirrorOptions {
  namespace: string;
  /** The folder the GitTarget "configs" writes, and what its WatchRule selects. */
  folder: string;
  rules: WatchRule["spec"]["rules"];
  transport?: Transport;
  /**
   * With the redis transport: Redis asks for a password and speaks TLS only (its CA the test's),
   * and the operator signs what it keeps there (--redis-hmac-key).
   */
  guardedRedis?: boolean;
  graceMs?: number;
  /** The fact index's TTL and caps; the operator's defaults otherwise. */
  index?: FactIndexLimits;
  /** The audit policy kube-apiserver records by; the harness default otherwise. */
  policy?: Record<string, unknown>;
  /**
   * --author-attribution-audit-route-annotation-key: kube-apiserver audits to the shared
   * /audit-webhook, and each event names its route in this annotation.
   */
  routeAnnotationKey?: string;
  /** More kube-apiserver flags, made in the fixture's directory (an OIDC issuer's, say). */
  apiServerArgs?: (dir: string) => Promise<string[]>;
}

export interface AttributedMirror {
  dir: string;
  env: AttributionEnv;
  plane: ControlPlane;
  git: GitServer;
  kc: KubeConfig;
  redis: RedisServer | undefined;
  operator: ReturnType<typeof startOperator>;
  /** `path` on main, or undefined while Git does not have it. */
  show(path: string): Promise<string | undefined>;
  /** The last commit that touched `path`, in `format` (git log's). */
  lastCommit(path: string, format?: string): Promise<string>;
  /** The author of the last commit that touched `path`, once `path` is in Git (or, with false, gone). */
  authorOnce(path: string, present?: boolean): Promise<string>;
  stop(): Promise<void>;
}

const user = { username: "gitops", password: "s3cret" };

export async function startAttributedMirror(options: AttributedMirrorOptions): Promise<AttributedMirror> {
  const { namespace, transport = "memory" } = options;
  const dir = makeOwnedTempDir("attributed");
  const workerRoot = makeOwnedTempDir("workers");
  const env = await attributionEnv(dir);
  const [plane, git, redis] = await Promise.all([
    (async () =>
      ControlPlane.start({
        audit: env.webhook(options.routeAnnotationKey ? "" : `${namespace}.self`, options.policy),
        extraApiServerArgs: (await options.apiServerArgs?.(dir)) ?? [],
      }))(),
    GitServer.start({ users: [user] }),
    transport === "redis"
      ? RedisServer.start(undefined, options.guardedRedis ? await redisGuard(dir) : undefined)
      : undefined,
  ]);
  const kc = plane.kubeConfig();
  const stopped = async (current = redis) => {
    await git.close();
    await plane.stop();
    await current?.stop();
    removeOwnedTempDir(workerRoot);
    removeOwnedTempDir(dir);
  };
  try {
    return await mirrorOn(options, { dir, workerRoot, env, plane, git, redis, kc, stopped });
  } catch (err) {
    await stopped(redis);
    throw err;
  }
}

async function mirrorOn(
  options: AttributedMirrorOptions,
  started: Pick<AttributedMirror, "dir" | "env" | "plane" | "git" | "redis" | "kc"> & {
    workerRoot: string;
    stopped: (redis: RedisServer | undefined) => Promise<void>;
  },
): Promise<AttributedMirror> {
  const { namespace, transport = "memory" } = options;
  const { env, git, kc, redis, workerRoot, plane } = started;
  await installCrds(kc);
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
  const url = await git.createRepository("state");
  await applyMirror(kc, namespace, url, user, [
    { name: "configs", path: options.folder, rules: options.rules },
  ]);
  // As a user installs it: its ServiceAccount under config/rbac's roles.
  const operator = startOperator((await shippedOperatorIdentity(plane, kc)).kubeConfig, {
    inClusterKubeProviders: [`${namespace}/self`],
    workerRoot,
    pushCooldownMs: 0,
    attribution: {
      ...env.settings({
        transport,
        ...(options.graceMs !== undefined ? { graceMs: options.graceMs } : {}),
      }),
      ...(options.index ? { index: options.index } : {}),
      ...(options.routeAnnotationKey
        ? {
            ingress: {
              ...env.settings({ transport }).ingress,
              routeAnnotationKey: options.routeAnnotationKey,
            },
          }
        : {}),
    },
    ...(redis ? { redisAddr: redis.address } : {}),
    ...(redis?.guard
      ? {
          redisAccess: {
            password: redis.guard.password,
            tls: { ca: redis.guard.tls.ca },
            hmacKey: "the replicas' shared key",
          },
        }
      : {}),
  });
  const show = (path: string) => git.gitIn("state", ["show", `main:${path}`]).catch(() => undefined);
  const lastCommit = (path: string, format = "%an <%ae>") =>
    git.gitIn("state", ["log", "-1", `--format=${format}`, "main", "--", path]);
  const mirror: AttributedMirror = {
    ...started,
    operator,
    show,
    lastCommit,
    async authorOnce(path, present = true) {
      await eventually(async () => ((await show(path)) !== undefined) === present, {
        timeoutMs: 60_000,
        description: `${path} ${present ? "in" : "gone from"} Git`,
      });
      return lastCommit(path);
    },
    async stop() {
      await operator.stop();
      // A test may have restarted Redis: the one the mirror holds now is the one to stop.
      await started.stopped(mirror.redis);
    },
  };
  // Live changes from here on: what the initial snapshot writes is a resync, with no actor.
  await eventually(
    async () =>
      (await gitTargets(kc).get(namespace, "configs"))?.status?.conditions?.find((c) => c.type === "Ready")
        ?.status === "True",
    { timeoutMs: 60_000, description: "the GitTarget configs Ready" },
  ).catch(async (err: unknown) => {
    await operator.stop();
    throw err;
  });
  return mirror;
}

/** A password, and a server certificate for 127.0.0.1 from a CA of the fixture's own. */
async function redisGuard(dir: string): Promise<RedisGuard> {
  const ca = await createCertificateAuthority(dir, "redis-ca");
  const serving = await issueCertificate(ca, dir, "redis-server", {
    commonName: "redis",
    usage: "server",
    ipAddresses: ["127.0.0.1"],
  });
  return {
    password: randomBytes(16).toString("hex"),
    tls: { cert: serving.certPem, key: serving.keyPem, ca: ca.certPem },
  };
}
