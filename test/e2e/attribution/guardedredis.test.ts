// Redis as a guarded boundary: TLS only, with a CA of its own, and a password. The operator
// reaches it with --redis-addr rediss://…, --redis-ca-file and --redis-password, and both of
// its uses go through: attribution's fact streams (a commit authored by the editor) and the
// durable write queue (DurableQueue=True). A client without the password, with a wrong one, or
// without the CA is told which flag to set, on the readiness the pod is gated by.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { gitBranches } from "../../../generated/v1alpha3/index.ts";
import { findCondition } from "../../../internal/operator/conditions.ts";
import { RedisConnection, type RedisAccess } from "../../../internal/redis/connection.ts";
import { startAttributedMirror, type AttributedMirror } from "../../support/attributedmirror.ts";
import { grantEditing, writeValue } from "../../support/attributionenv.ts";
import { quiet } from "../../support/logger.ts";
import { eventually } from "../../support/wait.ts";

const namespace = "guarded";
const folder = "clusters/dev";

describe("Redis with TLS and a password", () => {
  let mirror: AttributedMirror;

  before(async () => {
    mirror = await startAttributedMirror({
      namespace,
      folder,
      rules: [{ apiGroups: [""], resources: ["configmaps"] }],
      transport: "redis",
      guardedRedis: true,
      graceMs: 10_000,
    });
  });
  after(() => mirror?.stop());

  /** What a connection with `access` says on its readiness once Redis has answered it. */
  async function readinessWith(access: RedisAccess, says: RegExp): Promise<void> {
    const connection = new RedisConnection(mirror.redis!.address, quiet, access);
    const stop = new AbortController();
    const running = connection.start(stop.signal);
    try {
      await eventually(() => says.test(connection.readiness() ?? ""), {
        timeoutMs: 30_000,
        description: () => `readiness matching ${says}: ${connection.readiness()}`,
      });
    } finally {
      stop.abort();
      await running;
    }
  }

  it("Redis with TLS and a password: the durable queue and attribution work; without the password the operator says so", async () => {
    assert.match(mirror.redis!.address, /^rediss:\/\//);
    const alice = await mirror.plane.mintUser("alice");
    await grantEditing(mirror.kc, namespace, [
      { kind: "User", name: "alice", apiGroup: "rbac.authorization.k8s.io" },
    ]);
    await writeValue(alice.kubeConfig, namespace, "settings", "v1");
    // Attribution: the audit fact went through Redis's streams to the watch event.
    assert.match(await mirror.authorOnce(`${folder}/${namespace}/configmaps/settings.yaml`), /^alice /);
    // The durable queue: every accepted write appended to Redis.
    await eventually(
      async () =>
        findCondition(
          (await gitBranches(mirror.kc).get(namespace, "main"))?.status?.conditions,
          "DurableQueue",
        )?.status === "True",
      { timeoutMs: 30_000, description: "the GitBranch's DurableQueue True" },
    );

    const { password, tls } = mirror.redis!.guard!;
    await readinessWith({ tls: { ca: tls.ca } }, /asks for a password: set --redis-password/);
    await readinessWith({ password: "not-it", tls: { ca: tls.ca } }, /refused the username and password/);
    await readinessWith({ password }, /certificate is not trusted.*--redis-ca-file/);
    await readinessWith({ password, tls: { ca: tls.ca } }, /^$/);
    // An ACL user limited to the operator's keys and channel, as docs/operations.md shows it.
    const admin = mirror.redis!.client();
    try {
      await admin.call(
        "ACL",
        "SETUSER",
        "gitops-reverser",
        "on",
        ">acl-secret",
        "+@all",
        "~gitopsreverser:*",
        "&gitopsreverser:*",
      );
    } finally {
      admin.disconnect();
    }
    const user = new RedisConnection(mirror.redis!.address, quiet, {
      username: "gitops-reverser",
      password: "acl-secret",
      tls: { ca: tls.ca },
    });
    const stop = new AbortController();
    const running = user.start(stop.signal);
    try {
      await eventually(() => user.readiness() === undefined, {
        timeoutMs: 30_000,
        description: "the ACL user ready",
      });
      await user.client.xadd("gitopsreverser:probe", "*", "k", "v");
      await assert.rejects(user.client.set("other:key", "v"), /NOPERM/);
    } finally {
      stop.abort();
      await running;
    }
  });
});
