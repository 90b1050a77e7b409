import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, type KubeConfig, type V1Secret } from "@kubernetes/client-node";
import { parse } from "yaml";
import { gitTargets } from "../../../generated/v1alpha3/index.ts";
import { ControlPlane } from "../../support/controlplane.ts";
import { GitServer } from "../../support/gitserver.ts";
import { installCrds } from "../../support/manifests.ts";
import { applyMirror, mirrorFieldManager, mirrorGitTarget, type MirrorTarget } from "../../support/mirror.ts";
import { startOperator } from "../../support/operator.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";
import { shippedOperatorIdentity } from "../../support/shippedrbac.ts";
import { ageIdentity, sopsDecrypt, type AgeIdentity } from "../../support/sops.ts";
import { eventually } from "../../support/wait.ts";
import { secretEncryptions } from "../../../internal/telemetry/instruments.ts";
import { clients, condition, conditionOf, snapshotsMeasured } from "./helpers.ts";

const run = promisify(execFile);
const namespace = "vault";
const user = { username: "gitops", password: "git-password-never-in-git" };
const folder = "clusters/dev/secrets";
const plainFolder = "clusters/dev/plain";
const fileOf = (name: string) => `${folder}/${namespace}/secrets/${name}.sops.yaml`;

describe("Secrets are written to Git only as SOPS documents", () => {
  let plane: ControlPlane;
  let git: GitServer;
  let kc: KubeConfig;
  let core: CoreV1Api;
  let operator: ReturnType<typeof startOperator>;
  let workerRoot: string;
  let scratch: string;
  let alice: AgeIdentity;
  let bob: AgeIdentity;
  /** Every plaintext value the test has given the cluster, and its base64, to look for in Git. */
  const plaintexts: string[] = [user.password, Buffer.from(user.password).toString("base64")];
  const encrypted: MirrorTarget = {
    name: "secrets",
    path: folder,
    rules: [{ apiGroups: [""], resources: ["secrets", "configmaps"] }],
  };
  /** What every operator this test ran logged. */
  const logs: string[][] = [];
  /** Who the operator is: its ServiceAccount under config/rbac's roles, as a user installs it. */
  let operatorKc: KubeConfig;
  const start = () => {
    const started = startOperator(operatorKc, {
      inClusterKubeProviders: [`${namespace}/self`],
      workerRoot,
      pushCooldownMs: 0,
      additionalSensitiveResources: ["configmaps"],
    });
    logs.push(started.logs);
    return started;
  };
  const show = (path: string) => git.gitIn("state", ["show", `main:${path}`]).catch(() => undefined);
  const commits = async () => (await git.gitIn("state", ["rev-list", "main"])).split("\n").filter(Boolean);
  const changedBy = async (commit: string) =>
    (await git.gitIn("state", ["show", "--name-only", "--format=", commit])).split("\n").filter(Boolean);
  const remember = (value: string) => plaintexts.push(value, Buffer.from(value).toString("base64"));
  const secretBody = (name: string): V1Secret => {
    const token = randomBytes(24).toString("hex");
    const password = randomBytes(18).toString("base64url");
    remember(token);
    remember(password);
    return {
      metadata: { name, labels: { app: "shop" } },
      data: { token: Buffer.from(token).toString("base64") },
      stringData: { password },
    };
  };

  before(async () => {
    [plane, git] = await Promise.all([ControlPlane.start(), GitServer.start({ users: [user] })]);
    kc = plane.kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    scratch = makeOwnedTempDir("sops");
    [alice, bob] = await Promise.all([ageIdentity(scratch, "alice"), ageIdentity(scratch, "bob")]);
    encrypted.recipients = [alice.recipient];
    await installCrds(kc);
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    const url = await git.createRepository("state");
    await applyMirror(kc, namespace, url, user, [
      encrypted,
      { name: "plain", path: plainFolder, rules: [{ apiGroups: [""], resources: ["secrets"] }] },
    ]);
    workerRoot = makeOwnedTempDir("workers");
    operatorKc = (await shippedOperatorIdentity(plane, kc)).kubeConfig;
    operator = start();
  });
  after(async () => {
    await operator?.stop();
    await git?.close();
    await plane?.stop();
    if (workerRoot) removeOwnedTempDir(workerRoot);
    if (scratch) removeOwnedTempDir(scratch);
  });

  it("fifty Secrets with random values are in Git only encrypted", async () => {
    const names = Array.from({ length: 50 }, (_, i) => `s-${String(i).padStart(2, "0")}`);
    for (const name of names) await core.createNamespacedSecret({ namespace, body: secretBody(name) });
    await eventually(
      async () => (await git.listFiles("state", "main", `${folder}/${namespace}/secrets`)).length >= 51,
      {
        timeoutMs: 90_000,
        description: "the 50 Secrets and the credential Secret in Git",
      },
    );

    const history = await git.gitIn("state", ["log", "-p", "--all"]);
    for (const value of plaintexts)
      assert.equal(history.includes(value), false, "a plaintext value is in Git");
    for (const name of [...names.slice(0, 10), "git"]) {
      const text = (await show(fileOf(name)))!;
      const live = await core.readNamespacedSecret({ namespace, name });
      const decrypted = (await sopsDecrypt(scratch, text, alice)) as V1Secret;
      assert.deepEqual(decrypted.data, live.data, `${name}: sops -d gives the live values`);
      assert.deepEqual(
        Object.keys(decrypted.data!),
        Object.keys(live.data!).sort(),
        "keys in the written order",
      );
      assert.equal(decrypted.metadata?.name, name);
      const document = parse(text) as { metadata: unknown; sops: { encrypted_regex: string } };
      assert.deepEqual(document.metadata, {
        name,
        namespace,
        ...(name === "git" ? {} : { labels: { app: "shop" } }),
      });
      assert.equal(document.sops.encrypted_regex, "^(data|stringData)$");
    }
    const sopsConfig = parse((await show(`${folder}/.sops.yaml`))!) as { creation_rules: { age: string }[] };
    assert.equal(sopsConfig.creation_rules[0]?.age, alice.recipient);

    // A second resync, by a restart, makes no commit: the next commit is only the next Secret's.
    const before = await commits();
    await operator.stop();
    operator = start();
    await snapshotsMeasured(kc, namespace, "secrets", 2);
    await core.createNamespacedSecret({ namespace, body: secretBody("after-restart") });
    await eventually(() => show(fileOf("after-restart")), {
      timeoutMs: 60_000,
      description: "the next Secret",
    });
    const since = (await commits()).filter((c) => !before.includes(c));
    assert.equal(since.length, 1, "the restart's snapshot made no commit");
    assert.deepEqual(await changedBy(since[0]!), [fileOf("after-restart")]);
    const unchanged = (await secretEncryptions.get()).values.find(
      (v) => v.labels.outcome === "unchanged" && v.labels.gittarget_name === "secrets",
    );
    assert.ok(
      (unchanged?.value ?? 0) >= 51,
      "the restart proved every document unchanged without encrypting",
    );
  });

  it("a Secret edit re-encrypts one document", async () => {
    const before = await commits();
    const value = randomBytes(16).toString("hex");
    remember(value);
    await core.patchNamespacedSecret({
      namespace,
      name: "s-07",
      body: [{ op: "replace", path: "/data/password", value: Buffer.from(value).toString("base64") }],
    });
    const decrypted = await eventually(
      async () => {
        const text = await show(fileOf("s-07"));
        if (text === undefined) return undefined;
        const secret = (await sopsDecrypt(scratch, text, alice)) as V1Secret;
        return secret.data?.password === Buffer.from(value).toString("base64") && secret;
      },
      { timeoutMs: 60_000, description: "the new password in Git, encrypted" },
    );
    assert.ok(decrypted.data?.token, "the other value is kept");
    const since = (await commits()).filter((c) => !before.includes(c));
    assert.equal(since.length, 1);
    assert.deepEqual(await changedBy(since[0]!), [fileOf("s-07")]);
    assert.equal((await git.gitIn("state", ["log", "-p", "--all"])).includes(value), false);
  });

  it("a recipient change re-encrypts the target's sensitive documents", async () => {
    const before = await commits();
    const files = (await git.listFiles("state", "main", `${folder}/${namespace}/secrets`)).length;
    await gitTargets(kc).apply(
      mirrorGitTarget(namespace, { ...encrypted, recipients: [alice.recipient, bob.recipient] }),
      mirrorFieldManager,
    );
    await eventually(
      async () => {
        const text = await show(fileOf("s-00"));
        return text !== undefined && text.includes(bob.recipient);
      },
      { timeoutMs: 60_000, description: "s-00 encrypted to bob as well" },
    );
    const since = (await commits()).filter((c) => !before.includes(c));
    const secretsCommits = [];
    for (const commit of since) {
      const changed = (await changedBy(commit)).filter((p) =>
        p.startsWith(`${folder}/${namespace}/secrets/`),
      );
      if (changed.length > 0) secretsCommits.push(changed);
    }
    assert.equal(secretsCommits.length, 1, "one commit re-encrypts the Secrets");
    assert.equal(secretsCommits[0]!.length, files, "every Secret's document");
    const text = (await show(fileOf("s-13")))!;
    const live = await core.readNamespacedSecret({ namespace, name: "s-13" });
    assert.deepEqual(
      ((await sopsDecrypt(scratch, text, bob)) as V1Secret).data,
      live.data,
      "bob can read it",
    );
    assert.deepEqual(
      ((await sopsDecrypt(scratch, text, alice)) as V1Secret).data,
      live.data,
      "and alice still can",
    );
    const sopsConfig = parse((await show(`${folder}/.sops.yaml`))!) as { creation_rules: { age: string }[] };
    assert.equal(sopsConfig.creation_rules[0]?.age, `${alice.recipient},${bob.recipient}`);
  });

  it("an additional sensitive resource type is encrypted too", async () => {
    const value = randomBytes(16).toString("hex");
    remember(value);
    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "settings" }, data: { apiKey: value } },
    });
    const path = `${folder}/${namespace}/configmaps/settings.sops.yaml`;
    const text = await eventually(() => show(path), {
      timeoutMs: 60_000,
      description: "the ConfigMap, encrypted",
    });
    const decrypted = (await sopsDecrypt(scratch, text, alice)) as { data: Record<string, string> };
    assert.deepEqual(decrypted.data, { apiKey: value });
    assert.equal((await git.gitIn("state", ["log", "-p", "--all"])).includes(value), false);
    const { targets } = clients(kc);
    const target = await conditionOf(targets, namespace, "secrets", "EncryptionConfigured", "True");
    assert.match(
      condition(target, "EncryptionConfigured")?.message ?? "",
      /\d+ sensitive document\(s\) held encrypted/,
    );
  });

  it("without encryption a Secret is refused and nothing of it reaches disk", async () => {
    const { targets } = clients(kc);
    const refused = await conditionOf(
      targets,
      namespace,
      "plain",
      "EncryptionConfigured",
      "False",
      "EncryptionNotConfigured",
      60_000,
    );
    assert.match(condition(refused, "EncryptionConfigured")?.message ?? "", /spec\.encryption is not set/);
    assert.deepEqual(
      await git.listFiles("state", "main", plainFolder).then((f) => f.filter((p) => /secrets/.test(p))),
      [],
    );

    // Nothing in the worktree, nothing in the object store of the worker's clone or the remote, nothing in a log.
    const worktree = await run("grep", ["-rl", "--", plaintexts[2]!, workerRoot]).then(
      (r) => r.stdout,
      () => "",
    );
    assert.equal(worktree, "", "no file of the worker's holds a plaintext value");
    const stores = [await git.gitIn("state", ["cat-file", "--batch-all-objects", "--batch"])];
    for (const dir of (
      await run("find", [workerRoot, "-name", "objects", "-type", "d", "-path", "*/.git/objects"])
    ).stdout
      .split("\n")
      .filter(Boolean)) {
      const { stdout } = await run("git", ["cat-file", "--batch-all-objects", "--batch"], {
        cwd: dir.replace(/\/\.git\/objects$/, ""),
        maxBuffer: 256 * 1024 * 1024,
      });
      stores.push(stdout);
    }
    for (const store of stores)
      for (const value of plaintexts)
        assert.equal(store.includes(value), false, "an object holds a plaintext value");
    for (const value of plaintexts)
      assert.equal(
        logs.flat().some((line) => line.includes(value)),
        false,
        "a log line holds a plaintext value",
      );
  });
});
