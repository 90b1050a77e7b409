// A GitHub App as the GitProvider's credential, in Flux's and Argo CD's dialects, against a
// stand-in for GitHub's token endpoint (test/support/githubapp.ts: it checks the App's JWT
// against the App's public key and issues short-lived installation tokens) and the harness Git
// server, which serves Git to those tokens only, until they expire. The operator runs whole:
// its GitProvider probe, GitBranch proof and branch worker all take tokens from one cache.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { gitProviders } from "../../../generated/v1alpha3/index.ts";
import { installationTokens } from "../../../internal/gitauth/githubapp.ts";
import { condition, conditionOf } from "../controllers/helpers.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { generateAppKey, GitHubAppServer } from "../../support/githubapp.ts";
import { GitServer } from "../../support/gitserver.ts";
import { installCrds } from "../../support/manifests.ts";
import { applyMirror } from "../../support/mirror.ts";
import { startOperator } from "../../support/operator.ts";
import { shippedOperatorIdentity } from "../../support/shippedrbac.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";
import { eventually } from "../../support/wait.ts";

const appId = "4242";
const installationId = "77";
/** Tokens live 15 s and are replaced 5 s before they expire: a second comes while pushes go on. */
const tokenLifetimeMs = 15_000;
const marginMs = 5_000;
const namespace = "github-app";

describe("a GitHub App as the Git credential", () => {
  let github: GitHubAppServer;
  let git: GitServer;
  let plane: ControlPlane;
  let kc: KubeConfig;
  let core: CoreV1Api;
  let operator: ReturnType<typeof startOperator>;
  let workerRoot: string;
  const defaultMargin = installationTokens.marginMs;
  const providers = () => gitProviders(kc);
  const pathOf = (name: string) => `clusters/dev/${namespace}/configmaps/${name}.yaml`;

  before(async () => {
    github = await GitHubAppServer.start({ appId, installations: [installationId], tokenLifetimeMs });
    [git, plane] = await Promise.all([
      GitServer.start({ checkPassword: github.checkPassword }),
      ControlPlane.start(),
    ]);
    installationTokens.marginMs = marginMs;
    kc = plane.kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    await installCrds(kc);
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    const url = await git.createRepository("fleet");
    // Flux's dialect: githubAppBaseURL names the API, as for GitHub Enterprise Server.
    await applyMirror(
      kc,
      namespace,
      url,
      {
        githubAppID: appId,
        githubAppInstallationID: installationId,
        githubAppPrivateKey: github.privateKey,
        githubAppBaseURL: github.apiUrl,
      },
      [{ name: "configs", path: "clusters/dev", rules: [{ apiGroups: [""], resources: ["configmaps"] }] }],
    );
    workerRoot = makeOwnedTempDir("github-app-workers");
    // As a user installs it: its ServiceAccount under config/rbac's roles, not the admin.
    operator = startOperator((await shippedOperatorIdentity(plane, kc)).kubeConfig, {
      inClusterKubeProviders: [`${namespace}/self`],
      workerRoot,
      pushCooldownMs: 0,
    });
  });
  after(async () => {
    await operator?.stop();
    installationTokens.marginMs = defaultMargin;
    installationTokens.clear();
    await git?.close();
    await github?.close();
    await plane?.stop();
    if (workerRoot) removeOwnedTempDir(workerRoot);
  });

  it("a GitHub App credential pushes with an installation token, and a new token is fetched before the old expires", async () => {
    await conditionOf(providers(), namespace, "state", "Ready", "True", undefined, 60_000);
    const landed = () =>
      git.requests.filter((r) => r.service === "receive-pack" && !r.advertisement && r.status === 200);
    const pushers = () => new Set(landed().map((r) => r.username));
    // ConfigMaps one after another, each waited into Git, until pushes landed with two tokens.
    const made: string[] = [];
    const started = Date.now();
    while (pushers().size < 2 || made.length < 3) {
      assert.ok(Date.now() - started < 90_000, "pushes with a second token within 90 s");
      const name = `app-${made.length + 1}`;
      await core.createNamespacedConfigMap({ namespace, body: { metadata: { name }, data: { n: name } } });
      made.push(name);
      await eventually(() => git.fileAt("fleet", "main", pathOf(name)), {
        timeoutMs: 30_000,
        description: `${name} in Git`,
      });
      await new Promise((resolve) => setTimeout(resolve, 500));
    }

    // Pushes landed with two tokens or more, and each token after the first was fetched while the
    // one before it still worked, once that one was within the margin of its expiry: never sooner.
    const used = [...pushers()].sort();
    assert.ok(
      used.length >= 2 && used.every((name) => /^token-\d+$/.test(name ?? "")),
      `pushes by ${used.join(", ")}`,
    );
    for (let i = 1; i < github.issued.length; i++) {
      const [before, next] = [github.issued[i - 1]!, github.issued[i]!];
      assert.ok(
        next.issuedAt < before.expiresAt,
        `${next.name} was fetched ${next.issuedAt - before.expiresAt} ms after ${before.name} expired`,
      );
      assert.ok(
        next.issuedAt >= before.expiresAt - marginMs,
        `${next.name} was fetched ${before.expiresAt - marginMs - next.issuedAt} ms before ${before.name}'s margin`,
      );
    }
    // No call ever went out with an expired or missing token: the server refused none.
    assert.deepEqual(
      git.requests.filter((r) => r.status === 401).map((r) => `${r.service} ${r.username}`),
      [],
    );
    assert.ok(github.exchanges.every((e) => e.status === 201));
    for (const name of made) assert.ok(await git.fileAt("fleet", "main", pathOf(name)), `${name} in Git`);
    // Neither the key, a JWT nor a token is ever logged.
    const secrets = [
      ...github.issued.map((t) => t.token),
      github.privateKey.split("\n")[1]!,
      "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9",
    ];
    for (const line of operator.logs)
      for (const value of secrets) assert.ok(!line.includes(value), `a log line carries a secret: ${line}`);
  });

  /** A GitProvider whose Secret is Argo CD's dialect for the App, with `overrides`. */
  const provideArgoCd = async (ns: string, overrides: Record<string, string>) => {
    await core.createNamespace({ body: { metadata: { name: ns } } });
    await core.createNamespacedSecret({
      namespace: ns,
      body: {
        metadata: { name: "creds", labels: { "argocd.argoproj.io/secret-type": "repository" } },
        stringData: {
          type: "git",
          url: git.repositoryUrl("fleet"),
          githubAppID: appId,
          githubAppInstallationID: installationId,
          githubAppPrivateKey: github.privateKey,
          githubAppEnterpriseBaseUrl: github.apiUrl,
          ...overrides,
        },
      },
    });
    await providers().apply(
      {
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "GitProvider",
        metadata: { name: "repo", namespace: ns },
        spec: { url: git.repositoryUrl("fleet"), secretRef: { name: "creds" }, allowedGitBranches: [] },
      },
      "test",
    );
    const refused = await conditionOf(
      providers(),
      ns,
      "repo",
      "Validated",
      "False",
      "CredentialsInvalid",
      30_000,
    );
    assert.equal(condition(refused, "Ready")?.reason, "CredentialsInvalid");
    return condition(refused, "Validated")!.message;
  };

  it("a private key the App does not have is named on the GitProvider", async () => {
    const message = await provideArgoCd("github-app-bad-key", {
      githubAppPrivateKey: generateAppKey().privateKey,
    });
    assert.match(message, /Secret github-app-bad-key\/creds is not usable/);
    assert.match(message, /GitHub App 4242: the App's private key was refused \(401/);
  });

  it("an installation the App does not have is named on the GitProvider", async () => {
    const message = await provideArgoCd("github-app-no-installation", { githubAppInstallationID: "99" });
    assert.match(message, /installation 99 does not exist or is not installed for this App \(404/);
  });
});
