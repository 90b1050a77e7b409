import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { gitProviders, type GitProvider } from "../../../generated/v1alpha3/index.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { GitServer } from "../../support/gitserver.ts";
import { installCrds } from "../../support/manifests.ts";
import { applyMirror } from "../../support/mirror.ts";
import { startOperator } from "../../support/operator.ts";
import { shippedOperatorIdentity } from "../../support/shippedrbac.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";
import { eventually } from "../../support/wait.ts";
import { condition, conditionOf, signingRefused } from "./helpers.ts";

const run = promisify(execFile);
const namespace = "pgp";
const user = { username: "gitops", password: "s3cret" };
const passphrase = "correct horse battery staple";

describe("commits are signed with the GitProvider's OpenPGP key", () => {
  let plane: ControlPlane;
  let git: GitServer;
  let kc: KubeConfig;
  let core: CoreV1Api;
  let operator: ReturnType<typeof startOperator>;
  let workerRoot: string;
  let scratch: string;
  /** The key maker's GNUPGHOME, and the verifier's: it knows only what status publishes. */
  let maker: string;
  let verifier: string;
  const providers = () => gitProviders(kc);
  const show = (path: string) => git.gitIn("state", ["show", `main:${path}`]).catch(() => undefined);
  const gpg = (home: string, ...args: string[]) =>
    run("gpg", ["--batch", "--homedir", home, ...args]).then((r) => r.stdout);

  /** A key made by gpg itself, as a person would: its fingerprint and armored secret key. */
  const makeKey = async (uid: string, args: string[], secret: string[] = []) => {
    const status = await gpg(maker, "--status-fd", "1", ...secret, "--quick-gen-key", uid, ...args);
    const fingerprint = /KEY_CREATED [BP] ([0-9A-F]{40})/.exec(status)?.[1];
    assert.ok(fingerprint, `gpg made a key: ${status}`);
    const armored = await gpg(maker, ...secret, "--armor", "--export-secret-keys", fingerprint);
    assert.match(armored, /^-----BEGIN PGP PRIVATE KEY BLOCK-----/);
    return { fingerprint, armored };
  };

  /** The GitProvider's SigningConfigured False (CredentialsInvalid), its message matching `message`. */
  const refusedWith = (message: RegExp) => signingRefused(providers(), namespace, "state", message);

  const writeSigningSecret = (data: Record<string, string>) =>
    core.replaceNamespacedSecret({
      namespace,
      name: "pgp",
      body: { metadata: { name: "pgp" }, stringData: data },
    });

  /**
   * `git verify-commit` of every commit on main, with gpg and a GNUPGHOME that holds only the
   * public keys status.signingPublicKey published: each must be a good signature, and by which key.
   */
  const verifyAll = async (): Promise<Map<string, string>> => {
    const repository = git.repositoryPath("state");
    const env = { ...process.env, GNUPGHOME: verifier };
    const commits = (await git.gitIn("state", ["rev-list", "main"])).split("\n").filter(Boolean);
    assert.ok(commits.length > 0);
    const signers = new Map<string, string>();
    for (const commit of commits) {
      const { stderr } = await run("git", ["verify-commit", "--raw", commit], { cwd: repository, env });
      assert.match(stderr, /^\[GNUPG:\] GOODSIG /m, `${commit} has a good signature`);
      signers.set(commit, /^\[GNUPG:\] VALIDSIG ([0-9A-F]{40}) /m.exec(stderr)?.[1] ?? "");
    }
    const { stdout } = await run("git", ["log", "--show-signature", "-1", "main"], { cwd: repository, env });
    assert.match(stdout, /gpg: Good signature from "GitOps Reverser/);
    return signers;
  };

  /** Imports what status.signingPublicKey publishes into the verifier's GNUPGHOME. */
  const trustPublished = async (provider: GitProvider) => {
    const published = provider.status?.signingPublicKey ?? "";
    assert.match(
      published,
      /^-----BEGIN PGP PUBLIC KEY BLOCK-----\n[\s\S]+-----END PGP PUBLIC KEY BLOCK-----\n$/,
    );
    const file = join(scratch, "published.asc");
    writeFileSync(file, published);
    await gpg(verifier, "--import", file);
  };

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

  const signWith = (signing: Record<string, unknown>) =>
    providers().apply(
      {
        apiVersion: "configbutler.ai/v1alpha3",
        kind: "GitProvider",
        metadata: { name: "state", namespace },
        spec: { commit: { signing } },
      } as GitProvider,
      "signing",
    );

  before(async () => {
    scratch = makeOwnedTempDir("pgpsigning");
    // gpg refuses a home others may read; the keys never leave these two folders and the Secret.
    maker = join(scratch, "maker");
    verifier = join(scratch, "verifier");
    mkdirSync(maker, { mode: 0o700 });
    mkdirSync(verifier, { mode: 0o700 });
    [plane, git] = await Promise.all([ControlPlane.start(), GitServer.start({ users: [user] })]);
    kc = plane.kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    await installCrds(kc);
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    const url = await git.createRepository("state");
    await applyMirror(kc, namespace, url, user, [
      { name: "configs", path: "clusters/dev", rules: [{ apiGroups: [""], resources: ["configmaps"] }] },
    ]);
    await core.createNamespacedSecret({ namespace, body: { metadata: { name: "pgp" }, stringData: {} } });
    workerRoot = makeOwnedTempDir("workers");
    // As a user installs it: its ServiceAccount under config/rbac's roles, not the admin.
    operator = startOperator((await shippedOperatorIdentity(plane, kc)).kubeConfig, {
      inClusterKubeProviders: [`${namespace}/self`],
      workerRoot,
      pushCooldownMs: 0,
    });
  });
  after(async () => {
    await operator?.stop();
    await git?.close();
    await plane?.stop();
    // The agents gpg started for the two homes.
    for (const home of [maker, verifier].filter(Boolean))
      await run("gpgconf", ["--homedir", home, "--kill", "all"]).catch(() => undefined);
    if (workerRoot) removeOwnedTempDir(workerRoot);
    if (scratch) removeOwnedTempDir(scratch);
  });

  it("an OpenPGP-signed commit is verified by git verify-commit with gpg", async () => {
    // gpg's default key (RSA 3072), without a passphrase.
    const plain = await makeKey(
      "GitOps Reverser <noreply@configbutler.ai>",
      ["default", "default", "never"],
      ["--passphrase", ""],
    );
    await writeSigningSecret({ "signing-key": plain.armored });
    await signWith({ format: "openpgp", secretRef: { name: "pgp" } });
    let provider = await conditionOf(
      providers(),
      namespace,
      "state",
      "SigningConfigured",
      "True",
      undefined,
      60_000,
    );
    assert.match(
      condition(provider, "SigningConfigured")!.message,
      new RegExp(`OpenPGP key ${plain.fingerprint} \\(RSA 3072, GitOps Reverser`),
    );
    await trustPublished(provider);

    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "app" }, data: { k: "v" } },
    });
    await eventually(() => show("clusters/dev/pgp/configmaps/app.yaml"), {
      timeoutMs: 60_000,
      description: "the ConfigMap in Git",
    });
    const first = await verifyAll();
    assert.deepEqual(new Set(first.values()), new Set([plain.fingerprint]));
    const raw = await git.gitIn("state", ["cat-file", "commit", "main"]);
    assert.match(
      raw,
      /\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n [A-Za-z0-9+/]/,
      "the gpgsig header git writes",
    );

    // An Ed25519 key with a passphrase: stored without it, nothing is signed, and the condition says why.
    const locked = await makeKey(
      "GitOps Reverser (protected) <noreply@configbutler.ai>",
      ["ed25519", "sign", "never"],
      ["--pinentry-mode", "loopback", "--passphrase", passphrase],
    );
    await writeSigningSecret({ "signing-key": locked.armored });
    await lookAgain();
    const refused = await refusedWith(
      /cannot be used: the OpenPGP key is protected by a passphrase and the Secret has none: put it under passphrase/,
    );
    assert.equal(condition(refused, "Ready")?.status, "False");
    await eventually(() => !operator.workers.isAttached({ namespace, name: "configs" }), {
      timeoutMs: 60_000,
      description: "the target detached from its worker",
    });
    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "later" }, data: { k: "v" } },
    });

    // With its passphrase beside it, the change that waited is pushed, signed with the new key.
    await writeSigningSecret({ "signing-key": locked.armored, passphrase: `${passphrase}\n` });
    await lookAgain();
    provider = await eventually(
      async () => {
        const found = await providers().get(namespace, "state");
        const message = condition(found, "SigningConfigured")?.message ?? "";
        return message.includes(`OpenPGP key ${locked.fingerprint} (Ed25519,`) && found;
      },
      { timeoutMs: 60_000, description: "SigningConfigured names the protected key" },
    );
    await trustPublished(provider);
    await eventually(() => show("clusters/dev/pgp/configmaps/later.yaml"), {
      timeoutMs: 90_000,
      description: "the waiting change pushed once the key can be read",
    });
    const all = await verifyAll();
    const head = (await git.gitIn("state", ["rev-parse", "main"])).trim();
    assert.equal(all.get(head), locked.fingerprint, "the new commit is signed with the protected key");
    for (const [commit, signer] of first)
      assert.equal(all.get(commit), signer, "earlier commits are as they were");
  });

  it("a public key, and generateWhenMissing with openpgp, are refused saying what to do", async () => {
    await assert.rejects(
      signWith({ format: "openpgp", secretRef: { name: "pgp" }, generateWhenMissing: true }),
      /generateWhenMissing generates SSH keys only/,
    );
    const { stdout: publicOnly } = await run("gpg", [
      "--batch",
      "--homedir",
      verifier,
      "--armor",
      "--export",
    ]);
    const good = await core.readNamespacedSecret({ namespace, name: "pgp" });
    await core.replaceNamespacedSecret({
      namespace,
      name: "pgp",
      body: { metadata: { name: "pgp" }, stringData: { "signing-key": publicOnly } },
    });
    await lookAgain();
    await refusedWith(
      /an OpenPGP public key, which cannot sign: store the private key instead \(export one with gpg --armor --export-secret-keys KEYID\)/,
    );
    await core.replaceNamespacedSecret({
      namespace,
      name: "pgp",
      body: { metadata: { name: "pgp" }, data: good.data! },
    });
    await lookAgain();
    await conditionOf(providers(), namespace, "state", "SigningConfigured", "True", undefined, 60_000);
  });
});
