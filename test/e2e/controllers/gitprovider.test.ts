import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { setupGitProviderController } from "../../../controllers/gitprovider.ts";
import { gitProviders, type GitProvider } from "../../../generated/v1alpha3/index.ts";
import type { Condition } from "../../../internal/operator/conditions.ts";
import { condition } from "./helpers.ts";
import { Manager } from "../../../internal/operator/manager.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { GitServer } from "../../support/gitserver.ts";
import { installCrds } from "../../support/manifests.ts";
import { eventually } from "../../support/wait.ts";
import { quiet } from "../../support/logger.ts";

const writer = { username: "writer", password: "writer-password-1" };
const wrongPassword = "not-the-password-9";

describe("the GitProvider controller", () => {
  let plane: ControlPlane;
  let git: GitServer;
  let kc: KubeConfig;
  let core: CoreV1Api;
  let manager: Manager;
  let running: Promise<void>;
  let repoUrl: string;

  before(async () => {
    [plane, git] = await Promise.all([ControlPlane.start(), GitServer.start({ users: [writer] })]);
    kc = plane.kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    await installCrds(kc);
    repoUrl = await git.createRepository("platform");
    manager = new Manager(kc, { logger: quiet });
    // Short intervals, so a fixed Secret or a returning server shows within a test's patience.
    setupGitProviderController(manager, {
      intervals: { steadyMs: 1_000, blockedMs: 300, backoffBaseMs: 100, backoffMaxMs: 1_000 },
    });
    running = manager.start();
  });
  after(async () => {
    await manager?.stop();
    await running;
    await git?.close();
    await plane?.stop();
  });

  async function namespace(name: string): Promise<string> {
    await core.createNamespace({ body: { metadata: { name } } });
    return name;
  }

  async function putSecret(ns: string, name: string, stringData: Record<string, string>): Promise<void> {
    const body = { metadata: { name, namespace: ns }, stringData };
    try {
      await core.replaceNamespacedSecret({ namespace: ns, name, body });
    } catch {
      await core.createNamespacedSecret({ namespace: ns, body });
    }
  }

  async function applyProvider(ns: string, name: string, spec: GitProvider["spec"]): Promise<void> {
    await gitProviders(kc).apply(
      {
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "GitProvider",
        metadata: { name, namespace: ns },
        spec,
      },
      "test",
    );
  }

  /** Waits until the provider's Ready condition has this status (and reason), and returns the provider. */
  function readyIs(
    ns: string,
    name: string,
    status: Condition["status"],
    reason?: string,
  ): Promise<GitProvider> {
    return eventually(
      async () => {
        const provider = await gitProviders(kc).get(ns, name);
        const ready = condition(provider, "Ready");
        return ready?.status === status && (reason === undefined || ready.reason === reason) && provider;
      },
      { description: `GitProvider ${ns}/${name} Ready=${status}${reason ? ` (${reason})` : ""}` },
    );
  }

  it("A GitProvider with wrong credentials is not Ready, with a clear message; with the right ones it is Ready", async () => {
    const ns = await namespace("gp-credentials");
    await putSecret(ns, "git-creds", { username: writer.username, password: wrongPassword });
    await applyProvider(ns, "platform", { url: repoUrl, secretRef: { name: "git-creds" } });

    const refused = await readyIs(ns, "platform", "False", "CredentialsInvalid");
    const message = condition(refused, "Ready")!.message;
    assert.equal(
      message,
      `${repoUrl} did not accept the credential in Secret ${ns}/git-creds (401 Unauthorized): check its username and password, or its token.`,
    );
    assert.equal(condition(refused, "Stalled")?.status, "True");
    assert.equal(condition(refused, "Validated")?.status, "True", "the Secret itself is readable");
    assert.equal(condition(refused, "Reachable")?.reason, "CredentialsInvalid");
    for (const c of refused.status?.conditions ?? [])
      assert.ok(!c.message.includes(wrongPassword), c.message);
    assert.equal(refused.status?.lastVerifiedAt, undefined);

    // Nothing watches Secrets: the next look at the provider picks the fixed one up.
    await putSecret(ns, "git-creds", writer);
    const ready = await readyIs(ns, "platform", "True", "Succeeded");
    assert.equal(condition(ready, "Reachable")?.status, "True");
    assert.equal(condition(ready, "Validated")?.status, "True");
    assert.equal(condition(ready, "Stalled")?.status, "False");
    assert.equal(ready.status?.observedGeneration, ready.metadata.generation);
    assert.ok(ready.status?.lastVerifiedAt, "lastVerifiedAt is set once the repository answered");
  });

  it("reports a missing Secret as SecretNotFound, and a Secret with no usable key as CredentialsInvalid", async () => {
    const ns = await namespace("gp-secrets");
    await applyProvider(ns, "platform", { url: repoUrl, secretRef: { name: "absent" } });
    const missing = await readyIs(ns, "platform", "False", "SecretNotFound");
    assert.equal(condition(missing, "Validated")?.reason, "SecretNotFound");
    assert.equal(condition(missing, "Reachable")?.status, "Unknown");
    assert.match(
      condition(missing, "Ready")!.message,
      /Secret gp-secrets\/absent \(spec.secretRef\) does not exist/,
    );

    await putSecret(ns, "absent", { "ssh-privatekey": "-----BEGIN OPENSSH PRIVATE KEY-----\nnot-a-key\n" });
    const unusable = await readyIs(ns, "platform", "False", "CredentialsInvalid");
    assert.equal(condition(unusable, "Validated")?.status, "False");
    assert.match(
      condition(unusable, "Ready")!.message,
      /SSH private key \(ssh-privatekey\), which does not fit an http\(s\) URL/,
    );
    assert.ok(!condition(unusable, "Ready")!.message.includes("not-a-key"));
  });

  it("reports a repository the server does not have as RepositoryUnreachable", async () => {
    const ns = await namespace("gp-missing-repo");
    await putSecret(ns, "git-creds", writer);
    await applyProvider(ns, "nowhere", {
      url: git.repositoryUrl("nowhere"),
      secretRef: { name: "git-creds" },
    });
    const unreachable = await readyIs(ns, "nowhere", "False", "RepositoryUnreachable");
    assert.match(
      condition(unreachable, "Ready")!.message,
      /answered 404 Not Found: the repository does not exist/,
    );
    assert.equal(condition(unreachable, "Reachable")?.status, "False");
  });

  it("never shows a password written into the URL", async () => {
    const ns = await namespace("gp-url-password");
    const withPassword = repoUrl.replace("://", `://${writer.username}:${writer.password}@`);
    await applyProvider(ns, "inline", { url: withPassword });
    const ready = await readyIs(ns, "inline", "True", "Succeeded");
    for (const c of ready.status?.conditions ?? [])
      assert.ok(!c.message.includes(writer.password), c.message);
  });

  it("reports an outage as RepositoryUnreachable while retrying, and is Ready again when the server returns", async () => {
    const ns = await namespace("gp-outage");
    await putSecret(ns, "git-creds", writer);
    await applyProvider(ns, "platform", { url: repoUrl, secretRef: { name: "git-creds" } });
    const before = await readyIs(ns, "platform", "True");

    await git.stop();
    const down = await readyIs(ns, "platform", "Unknown", "RepositoryUnreachable");
    assert.equal(
      condition(down, "Reconciling")?.status,
      "True",
      "a transient failure is retried, not Stalled",
    );
    assert.equal(condition(down, "Stalled")?.status, "False");
    assert.match(condition(down, "Ready")!.message, /could not be reached: .*Trying again with backoff/);
    assert.equal(
      down.status?.lastVerifiedAt !== undefined,
      true,
      "the last verification is kept through an outage",
    );

    await git.start();
    const back = await readyIs(ns, "platform", "True", "Succeeded");
    assert.ok(Date.parse(back.status!.lastVerifiedAt!) > Date.parse(before.status!.lastVerifiedAt!));
  });
});
