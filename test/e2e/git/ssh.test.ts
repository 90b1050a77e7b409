import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { join } from "node:path";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { setupGitProviderController } from "../../../controllers/gitprovider.ts";
import { GitProviderReason, gitProviders } from "../../../generated/v1alpha3/index.ts";
import { Clone, RemoteMovedError } from "../../../internal/git/engine/clone.ts";
import type { RemoteAuth } from "../../../internal/git/engine/transport.ts";
import { Manager } from "../../../internal/operator/manager.ts";
import { condition } from "../controllers/helpers.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { GitServer } from "../../support/gitserver.ts";
import { installCrds } from "../../support/manifests.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";
import { SshServer, sshKeyPair, type SshKeyPair } from "../../support/sshserver.ts";
import { eventually } from "../../support/wait.ts";
import { quiet } from "../../support/logger.ts";

const signature = { name: "Operator", email: "operator@example.com" };

describe("the SSH transport", () => {
  let git: GitServer;
  let sshd: SshServer;
  let scratch: string;
  let client: SshKeyPair;
  let plane: ControlPlane;
  let kc: KubeConfig;
  let manager: Manager;
  let running: Promise<void>;

  before(async () => {
    scratch = makeOwnedTempDir("ssh-test");
    client = await sshKeyPair(scratch, "client");
    [git, sshd, plane] = await Promise.all([
      GitServer.start({ users: [{ username: "seeder", password: "seeder-password" }] }),
      SshServer.start({ authorizedKeys: [client.publicKey] }),
      ControlPlane.start(),
    ]);
    kc = plane.kubeConfig();
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
    await sshd?.close();
    await git?.close();
    await plane?.stop();
    removeOwnedTempDir(scratch);
  });

  const auth = (knownHosts: string): RemoteAuth => ({
    kind: "ssh",
    privateKey: client.privateKey,
    knownHosts,
  });

  it("SSH transport clones and pushes with a known host key", async () => {
    await git.createRepository("over-ssh");
    const seeded = await git.pushForeignCommit("over-ssh", { files: { "README.md": "# seeded\n" } });
    const url = sshd.url(git.repositoryPath("over-ssh"));
    const clone = new Clone({
      dir: join(scratch, "clone"),
      url,
      branch: "main",
      auth: auth(sshd.knownHostsLine),
    });

    const root = await clone.fetchAndReset();
    assert.deepEqual(root, { from: "branch", commit: seeded }, await sshd.log());
    assert.equal(await clone.read("README.md"), "# seeded\n");
    await clone.write("apps/a.yaml", "a: 1\n");
    const ours = await clone.commit(["apps/a.yaml"], "add a", signature, signature);
    assert.equal(await clone.push(root), ours);
    assert.equal(await git.branchHead("over-ssh", "main"), ours);
    assert.equal(
      await git.gitIn("over-ssh", ["log", "-1", "--format=%an <%ae>", "main"]),
      "Operator <operator@example.com>",
    );

    // The compare-and-swap holds over SSH too: a branch moved since the root is not overwritten.
    const next = await clone.fetchAndReset();
    await clone.write("apps/b.yaml", "b: 1\n");
    await clone.commit(["apps/b.yaml"], "add b", signature, signature);
    const foreign = await git.pushForeignCommit("over-ssh", { files: { "foreign.yaml": "x: 1\n" } });
    await assert.rejects(clone.push(next), RemoteMovedError);
    assert.equal(await git.branchHead("over-ssh", "main"), foreign, "the foreign commit stays");
    await clone.close();
  });

  it("an unknown host key is refused", async () => {
    await git.createRepository("wrong-host");
    await git.pushForeignCommit("wrong-host", { files: { "README.md": "# seeded\n" } });
    const url = sshd.url(git.repositoryPath("wrong-host"));
    const impostor = (await sshKeyPair(scratch, "impostor")).publicKey.split(" ").slice(0, 2).join(" ");
    const wrongLine = `[127.0.0.1]:${sshd.port} ${impostor}`;

    const clone = new Clone({ dir: join(scratch, "refused"), url, branch: "main", auth: auth(wrongLine) });
    await assert.rejects(clone.fetchAndReset(), /Host key verification failed/);

    const ns = "ssh-host-key";
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: ns } } });
    await core.createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: "deploy-key" }, stringData: { "ssh-privatekey": client.privateKey } },
    });
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: "hosts" }, data: { known_hosts: `${wrongLine}\n` } },
    });
    await gitProviders(kc).apply(
      {
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "GitProvider",
        metadata: { name: "repo", namespace: ns },
        spec: {
          url,
          secretRef: { name: "deploy-key" },
          knownHostsRef: { kind: "ConfigMap", name: "hosts" },
          allowedGitBranches: [],
        },
      },
      "test",
    );
    const reachable = await eventually(
      async () => {
        const provider = await gitProviders(kc).get(ns, "repo");
        const found = condition(provider, "Reachable");
        return found?.reason === GitProviderReason.HostKeyUnknown && found;
      },
      { timeoutMs: 30_000, description: "Reachable=False with HostKeyUnknown" },
    );
    assert.equal(reachable.status, "False");
    assert.match(reachable.message, /known hosts/);
    assert.match(reachable.message, /spec\.knownHostsRef/);

    // The right key in the ConfigMap makes the same provider reachable.
    await core.replaceNamespacedConfigMap({
      namespace: ns,
      name: "hosts",
      body: { metadata: { name: "hosts" }, data: { known_hosts: `${sshd.knownHostsLine}\n` } },
    });
    await eventually(
      async () => condition(await gitProviders(kc).get(ns, "repo"), "Reachable")?.status === "True",
      { timeoutMs: 30_000, description: "Reachable=True with the right host key" },
    );
  });
});
