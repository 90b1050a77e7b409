// HTTPS remotes behind a private CA, with and without a required client certificate: the
// credential Secret's CA, client certificate and bearer token reach git and the GitProvider's
// probe, in the Kubernetes, Flux and Argo CD dialects, and a missing one is reported clearly.
import { quiet } from "../../support/logger.ts";
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { join } from "node:path";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { setupGitProviderController } from "../../../controllers/gitprovider.ts";
import {
  GitProviderReason,
  gitProviders,
  type GitBranch,
  type GitProvider,
} from "../../../generated/v1alpha3/index.ts";
import { Clone, type CloneOptions } from "../../../internal/git/engine/clone.ts";
import { readGitCredential } from "../../../internal/gitauth/credentials.ts";
import { workerSpec } from "../../../internal/gitbranch/workerspec.ts";
import { Manager } from "../../../internal/operator/manager.ts";
import { condition } from "../controllers/helpers.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { GitServer } from "../../support/gitserver.ts";
import { installCrds } from "../../support/manifests.ts";
import { createCertificateAuthority, issueCertificate, type CertFiles } from "../../support/pki.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";
import { eventually } from "../../support/wait.ts";

const signature = { name: "Operator", email: "operator@example.com" };
const bot = { username: "bot", password: "bot-password", bearerToken: "bearer-token-of-bot" };

describe("the HTTPS transport", () => {
  let scratch: string;
  let ca: CertFiles;
  let clientCert: CertFiles;
  let open: GitServer;
  let mutual: GitServer;
  let plane: ControlPlane;
  let kc: KubeConfig;
  let core: CoreV1Api;
  let manager: Manager;
  let running: Promise<void>;

  before(async () => {
    scratch = makeOwnedTempDir("https-test");
    ca = await createCertificateAuthority(scratch, "git-ca");
    const serving = await issueCertificate(ca, scratch, "git-server", {
      commonName: "git-server",
      usage: "server",
      ipAddresses: ["127.0.0.1"],
    });
    clientCert = await issueCertificate(ca, scratch, "git-client", { commonName: "bot", usage: "client" });
    const tls = { cert: serving.certPem, key: serving.keyPem };
    [open, mutual, plane] = await Promise.all([
      GitServer.start({ users: [bot], tls }),
      GitServer.start({ users: [bot], tls: { ...tls, clientCa: ca.certPem } }),
      ControlPlane.start(),
    ]);
    kc = plane.kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    await installCrds(kc);
    manager = new Manager(kc, { logger: quiet });
    setupGitProviderController(manager, {
      intervals: { steadyMs: 1_000, blockedMs: 300, backoffBaseMs: 100, backoffMaxMs: 1_000 },
    });
    running = manager.start();
  });
  after(async () => {
    await manager?.stop();
    await running;
    await open?.close();
    await mutual?.close();
    await plane?.stop();
    removeOwnedTempDir(scratch);
  });

  /** The transport a branch worker gets from a Secret holding `values`, as the operator builds it. */
  const authFrom = (values: Record<string, string>, url: string): CloneOptions["auth"] => {
    const data = Object.fromEntries(
      Object.entries(values).map(([k, v]) => [k, Buffer.from(v).toString("base64")]),
    );
    const credential = readGitCredential(data, url);
    assert.ok(!("reason" in credential), "reason" in credential ? credential.message : "");
    const provider = { metadata: { name: "p", namespace: "ns" }, spec: { url } } as GitProvider;
    const branch = {
      metadata: { name: "b", namespace: "ns", uid: "u" },
      spec: { branch: "main" },
    } as GitBranch;
    const outcome = workerSpec(branch, provider, { kind: "loaded", credential, fingerprint: "f" }, undefined);
    assert.equal(outcome.kind, "spec", outcome.kind === "none" ? outcome.reason : "");
    return outcome.kind === "spec" ? outcome.spec.auth : undefined;
  };

  /** Clones `url` with the Secret's transport, commits one file and pushes it; returns the commit. */
  const pushWith = async (server: GitServer, name: string, values: Record<string, string>) => {
    const url = await server.createRepository(name);
    await server.pushForeignCommit(name, { files: { "README.md": "# seeded\n" } });
    const clone = new Clone({ dir: join(scratch, name), url, branch: "main", auth: authFrom(values, url) });
    const root = await clone.fetchAndReset();
    await clone.write("apps/a.yaml", "a: 1\n");
    const ours = await clone.commit(["apps/a.yaml"], "add a", signature, signature);
    assert.equal(await clone.push(root), ours);
    await clone.close();
    assert.equal(await server.branchHead(name, "main"), ours);
    return ours;
  };

  /** Applies a GitProvider for `url` with a Secret holding `values`, in a namespace of its own. */
  const provide = async (ns: string, url: string, values: Record<string, string>) => {
    await core.createNamespace({ body: { metadata: { name: ns } } });
    await core.createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: "creds" }, stringData: values },
    });
    await gitProviders(kc).apply(
      {
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "GitProvider",
        metadata: { name: "repo", namespace: ns },
        spec: { url, secretRef: { name: "creds" }, allowedGitBranches: [] },
      },
      "test",
    );
  };
  const replaceSecret = (ns: string, values: Record<string, string>) =>
    core.replaceNamespacedSecret({
      namespace: ns,
      name: "creds",
      body: { metadata: { name: "creds" }, stringData: values },
    });
  const reachable = (ns: string, status: "True" | "False", description: string) =>
    eventually(
      async () => {
        const found = condition(await gitProviders(kc).get(ns, "repo"), "Reachable");
        return found?.status === status && found;
      },
      { timeoutMs: 30_000, description },
    );

  it("ca.crt beside a username and password makes a private CA's server trusted", async () => {
    const basic = { username: bot.username, password: bot.password };
    await pushWith(open, "private-ca", { ...basic, "ca.crt": ca.certPem });

    const untrusted = new Clone({
      dir: join(scratch, "untrusted"),
      url: open.repositoryUrl("private-ca"),
      branch: "main",
      auth: authFrom(basic, open.repositoryUrl("private-ca")),
    });
    await assert.rejects(untrusted.fetchAndReset(), /certificate verification failed|certificate problem/);
  });

  it("without ca.crt the GitProvider reports the server's certificate as not trusted", async () => {
    const url = await open.createRepository("provider-ca");
    await provide("https-ca", url, { username: bot.username, password: bot.password });
    const refused = await reachable("https-ca", "False", "Reachable=False: certificate not trusted");
    assert.equal(refused.reason, GitProviderReason.RepositoryUnreachable);
    assert.match(refused.message, /certificate is not trusted/);
    assert.match(refused.message, /ca\.crt/);

    await replaceSecret("https-ca", { username: bot.username, password: bot.password, "ca.crt": ca.certPem });
    await reachable("https-ca", "True", "Reachable=True once ca.crt is given");
  });

  it("a bearerToken is sent as a bearer token", async () => {
    await pushWith(open, "bearer", { bearerToken: bot.bearerToken, "ca.crt": ca.certPem });
    const pushes = open.requests.filter((r) => r.repository === "bearer" && r.service === "receive-pack");
    assert.ok(pushes.length > 0 && pushes.every((r) => r.username === bot.username && r.status === 200));
  });

  it("a server that requires a client certificate accepts tls.crt and tls.key", async () => {
    await pushWith(mutual, "mutual", {
      "tls.crt": clientCert.certPem,
      "tls.key": clientCert.keyPem,
      "ca.crt": ca.certPem,
    });
    const url = mutual.repositoryUrl("mutual");
    const without = new Clone({
      dir: join(scratch, "no-client-cert"),
      url,
      branch: "main",
      auth: authFrom({ username: bot.username, password: bot.password, "ca.crt": ca.certPem }, url),
    });
    // git's own words for a refused handshake are terse; the GitProvider's probe names the fix.
    await assert.rejects(without.fetchAndReset(), /unable to access/);
  });

  it("Argo CD's tlsClientCertData and tlsClientCertKey are a client certificate", async () => {
    await pushWith(mutual, "mutual-argocd", {
      username: bot.username,
      password: bot.password,
      tlsClientCertData: clientCert.certPem,
      tlsClientCertKey: clientCert.keyPem,
      "ca.crt": ca.certPem,
    });
  });

  it("without a client certificate the GitProvider says the server asks for one", async () => {
    const url = await mutual.createRepository("provider-mutual");
    const basic = { username: bot.username, password: bot.password, "ca.crt": ca.certPem };
    await provide("https-mutual", url, basic);
    const refused = await reachable("https-mutual", "False", "Reachable=False: client certificate needed");
    assert.match(refused.message, /client certificate/);
    assert.match(refused.message, /tls\.crt/);

    await replaceSecret("https-mutual", {
      ...basic,
      "tls.crt": clientCert.certPem,
      "tls.key": clientCert.keyPem,
    });
    await reachable("https-mutual", "True", "Reachable=True with the client certificate");
  });
});
