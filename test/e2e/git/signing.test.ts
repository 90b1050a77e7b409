import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import { signCommits } from "../../../internal/git/engine/commitsigner.ts";
import { generateSigningKey, readSigningKey } from "../../../internal/signing/sshkey.ts";
import { sshSignature } from "../../../internal/signing/sshsig.ts";
import { makeOwnedTempDir, removeOwnedTempDir } from "../../support/reaper.ts";

const run = promisify(execFile);

describe("SSH signatures, checked by OpenSSH and git", () => {
  let dir: string;
  before(() => {
    dir = makeOwnedTempDir("sshsig");
  });
  after(() => removeOwnedTempDir(dir));

  const verifies = async (publicKey: string, message: string, signature: string) => {
    writeFileSync(join(dir, "allowed"), `signer ${publicKey}\n`);
    writeFileSync(join(dir, "message.sig"), signature);
    const child = execFile("ssh-keygen", [
      "-Y",
      "verify",
      "-f",
      join(dir, "allowed"),
      "-I",
      "signer",
      "-n",
      "git",
      "-s",
      join(dir, "message.sig"),
    ]);
    child.stdin!.end(message);
    const code = await new Promise<number | null>((resolve) => child.on("close", (c) => resolve(c)));
    return code === 0;
  };

  for (const [type, args] of [
    ["ed25519", ["-t", "ed25519"]],
    ["RSA", ["-t", "rsa", "-b", "2048"]],
    ["ECDSA P-256", ["-t", "ecdsa", "-b", "256"]],
    ["ECDSA P-384 in PEM", ["-t", "ecdsa", "-b", "384", "-m", "PEM"]],
  ] as const) {
    it(`a signature with an ${type} key ssh-keygen made verifies with ssh-keygen -Y verify`, async () => {
      const file = join(dir, `key-${type.replace(/\W/g, "")}`);
      await run("ssh-keygen", ["-q", ...args, "-N", "", "-C", "test", "-f", file]);
      const key = readSigningKey(readFileSync(file, "utf8"));
      assert.equal(key.publicKey, readFileSync(`${file}.pub`, "utf8").split(" ").slice(0, 2).join(" "));
      assert.equal(await verifies(key.publicKey, "a commit\n", sshSignature(key, "a commit\n")), true);
      assert.equal(await verifies(key.publicKey, "another\n", sshSignature(key, "a commit\n")), false);
    });
  }

  it("a generated key is one ssh-keygen reads", async () => {
    const { privateKey, publicKey } = generateSigningKey("test");
    writeFileSync(join(dir, "generated"), privateKey, { mode: 0o600 });
    const { stdout } = await run("ssh-keygen", ["-y", "-f", join(dir, "generated")]);
    assert.equal(stdout.trim(), publicKey);
  });

  it("commits signed as they are pushed keep their trees, and git verify-commit accepts each", async () => {
    const repo = join(dir, "repo");
    const git = (...args: string[]) => run("git", args, { cwd: repo }).then((r) => r.stdout.trim());
    await run("git", ["init", "-q", "-b", "main", repo]);
    await git("config", "user.name", "GitOps Reverser");
    await git("config", "user.email", "noreply@configbutler.ai");
    await git("commit", "-q", "--allow-empty", "-m", "base");
    const base = await git("rev-parse", "HEAD");
    for (const n of [1, 2, 3]) {
      writeFileSync(join(repo, `f${n}.yaml`), `n: ${n}\n`);
      await git("add", ".");
      await git("commit", "-q", "-m", `commit ${n}\n\nwith a body`);
    }
    const head = await git("rev-parse", "HEAD");
    const key = readSigningKey(generateSigningKey().privateKey);
    const signed = await signCommits(repo, base, head, key);

    assert.equal(await git("rev-parse", `${signed}^{tree}`), await git("rev-parse", `${head}^{tree}`));
    const chain = (await git("rev-list", `${base}..${signed}`)).split("\n");
    assert.equal(chain.length, 3);
    assert.equal(await git("rev-parse", `${signed}~3`), base, "the base itself is left as it was");
    writeFileSync(join(dir, "signers"), `noreply@configbutler.ai namespaces="git" ${key.publicKey}\n`);
    for (const commit of chain)
      await git("-c", `gpg.ssh.allowedSignersFile=${join(dir, "signers")}`, "verify-commit", commit);
    assert.equal(await git("log", "-1", "--format=%B", signed), "commit 3\n\nwith a body");
    await git("fsck", "--strict");
  });
});
