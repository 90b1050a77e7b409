import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { gitProviders, type GitProvider } from "../../../generated/v1alpha3/index.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { GitServer } from "../../support/gitserver.ts";
import { installCrds } from "../../support/manifests.ts";
import { applyGeneratedSigning, applyMirror } from "../../support/mirror.ts";
import { startOperator } from "../../support/operator.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";
import { eventually } from "../../support/wait.ts";
import { condition, conditionOf, signingRefused } from "./helpers.ts";

const run = promisify(execFile);
const namespace = "signed";
const user = { username: "gitops", password: "s3cret" };
const committerEmail = "noreply@configbutler.ai";

describe("commits are signed with the GitProvider's SSH key", () => {
  let plane: ControlPlane;
  let git: GitServer;
  let kc: KubeConfig;
  let core: CoreV1Api;
  let operator: ReturnType<typeof startOperator>;
  let workerRoot: string;
  let scratch: string;
  const providers = () => gitProviders(kc);
  const show = (path: string) => git.gitIn("state", ["show", `main:${path}`]).catch(() => undefined);
  /** `git verify-commit` of every commit on main, with an allowed-signers file holding `publicKey`. */
  const verifyAll = async (publicKey: string) => {
    const signers = join(scratch, "allowed_signers");
    writeFileSync(signers, `${committerEmail} namespaces="git" ${publicKey}\n`);
    const commits = (await git.gitIn("state", ["rev-list", "main"])).split("\n").filter(Boolean);
    for (const commit of commits) {
      await git.gitIn("state", ["-c", `gpg.ssh.allowedSignersFile=${signers}`, "verify-commit", commit]);
    }
    return git.gitIn("state", [
      "-c",
      `gpg.ssh.allowedSignersFile=${signers}`,
      "log",
      "--show-signature",
      "-1",
      "main",
    ]);
  };

  /** Asks the GitProvider controller to read its Secrets again now, as a person fixing one would. */
  const lookAgain = () =>
    providers().apply(
      {
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "GitProvider",
        metadata: {
          name: "state",
          namespace,
          annotations: { "reconcile.configbutler.ai/requestedAt": new Date().toISOString() },
        },
      } as unknown as GitProvider,
      "requested-at-test",
    );

  before(async () => {
    [plane, git] = await Promise.all([ControlPlane.start(), GitServer.start({ users: [user] })]);
    kc = plane.kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    scratch = makeOwnedTempDir("signing");
    await installCrds(kc);
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    const url = await git.createRepository("state");
    await applyMirror(kc, namespace, url, user, [
      { name: "configs", path: "clusters/dev", rules: [{ apiGroups: [""], resources: ["configmaps"] }] },
    ]);
    await applyGeneratedSigning(kc, namespace);
    workerRoot = makeOwnedTempDir("workers");
    operator = startOperator(kc, {
      inClusterKubeProviders: [`${namespace}/self`],
      workerRoot,
      pushCooldownMs: 0,
    });
  });
  after(async () => {
    await operator?.stop();
    await git?.close();
    await plane?.stop();
    if (workerRoot) removeOwnedTempDir(workerRoot);
    if (scratch) removeOwnedTempDir(scratch);
  });

  it("a commit signed with a generated key verifies", async () => {
    const provider = await conditionOf(
      providers(),
      namespace,
      "state",
      "SigningConfigured",
      "True",
      undefined,
      60_000,
    );
    const publicKey = provider.status?.signingPublicKey ?? "";
    assert.match(publicKey, /^ssh-ed25519 AAAA/);
    const secret = await core.readNamespacedSecret({ namespace, name: "signing" });
    const generated = Buffer.from(secret.data?.["signing-key"] ?? "", "base64").toString();
    assert.match(generated, /^-----BEGIN OPENSSH PRIVATE KEY-----/);
    // The generated key is OpenSSH's own format: ssh-keygen reads it, and derives the same public key.
    const keyFile = join(scratch, "generated");
    writeFileSync(keyFile, generated, { mode: 0o600 });
    const derived = (await run("ssh-keygen", ["-y", "-f", keyFile])).stdout.trim();
    assert.equal(derived.split(" ").slice(0, 2).join(" "), publicKey.split(" ").slice(0, 2).join(" "));

    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "app" }, data: { k: "v" } },
    });
    await eventually(() => show("clusters/dev/signed/configmaps/app.yaml"), {
      timeoutMs: 60_000,
      description: "the ConfigMap in Git",
    });
    const log = await verifyAll(publicKey);
    assert.match(log, /Good "git" signature for noreply@configbutler\.ai with ED25519 key/);
  });

  it("a signing key that cannot be read stops the pushes with a condition, never an unsigned commit", async () => {
    const good = await core.readNamespacedSecret({ namespace, name: "signing" });
    const running = operator.workers.worker(`${namespace}/main`);
    assert.ok(running, "the GitBranch runs its worker");
    await core.patchNamespacedSecret({
      namespace,
      name: "signing",
      body: [
        { op: "replace", path: "/data/signing-key", value: Buffer.from("not a key").toString("base64") },
      ],
    });
    await lookAgain();
    const refused = await signingRefused(
      providers(),
      namespace,
      "state",
      /cannot be used: the signing key is not an OpenSSH or PEM private key/,
    );
    assert.equal(condition(refused, "Ready")?.status, "False");

    // The target stops feeding its worker: a change made now waits, unwritten.
    await eventually(() => !operator.workers.isAttached({ namespace, name: "configs" }), {
      timeoutMs: 60_000,
      description: "the target detached from its worker",
    });
    // Held, not stopped: a worker stopped here would drop, without Redis, what it has not pushed.
    assert.equal(operator.workers.worker(`${namespace}/main`), running, "the worker is held, not stopped");
    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "later" }, data: { k: "v" } },
    });

    await core.patchNamespacedSecret({
      namespace,
      name: "signing",
      body: [{ op: "replace", path: "/data/signing-key", value: good.data!["signing-key"] }],
    });
    await lookAgain();
    await eventually(() => show("clusters/dev/signed/configmaps/later.yaml"), {
      timeoutMs: 90_000,
      description: "the waiting change pushed once the key can be read",
    });
    const provider = await providers().get(namespace, "state");
    await verifyAll(provider!.status!.signingPublicKey!);
  });
});
