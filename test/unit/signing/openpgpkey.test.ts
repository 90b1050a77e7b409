import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import * as openpgp from "openpgp";
import { decideSigning, examineSigningKey, type SigningRead } from "../../../internal/gitprovider/signing.ts";
import { checkOpenPgpKey, openPgpSigningKey, readOpenPgpKey } from "../../../internal/signing/openpgpkey.ts";
import { signingPassphrase } from "../../../internal/signing/secret.ts";
import { generateSigningKey } from "../../../internal/signing/sshkey.ts";

const userIDs = [{ name: "GitOps Reverser", email: "noreply@configbutler.ai" }];

/** Whether `signature` is a good detached signature of `payload`, as binary data, by `publicKey`. */
async function verifies(publicKey: string, payload: string, signature: string): Promise<boolean> {
  const { signatures } = await openpgp.verify({
    message: await openpgp.createMessage({ binary: new Uint8Array(Buffer.from(payload)) }),
    signature: await openpgp.readSignature({ armoredSignature: signature }),
    verificationKeys: await openpgp.readKey({ armoredKey: publicKey }),
  });
  return signatures[0]!.verified.then(
    () => true,
    () => false,
  );
}

describe("an OpenPGP signing key", () => {
  let plain: { privateKey: string; publicKey: string };
  let protectedKey: { privateKey: string; publicKey: string };
  before(async () => {
    [plain, protectedKey] = await Promise.all([
      openpgp.generateKey({ type: "ecc", curve: "curve25519Legacy", userIDs, format: "armored" }),
      openpgp.generateKey({
        type: "ecc",
        curve: "curve25519Legacy",
        userIDs,
        passphrase: "correct horse",
        format: "armored",
      }),
    ]);
  });

  it("an unprotected armored key reads, names itself, and signs commits its public key verifies", async () => {
    const info = await readOpenPgpKey(plain.privateKey);
    const expected = await openpgp.readKey({ armoredKey: plain.publicKey });
    assert.equal(info.fingerprint, expected.getFingerprint().toUpperCase());
    assert.match(info.publicKey, /^-----BEGIN PGP PUBLIC KEY BLOCK-----/);
    assert.doesNotMatch(info.publicKey, /PRIVATE/);
    assert.equal(info.algorithm, "Ed25519");
    assert.deepEqual(info.userIds, ["GitOps Reverser <noreply@configbutler.ai>"]);

    const key = openPgpSigningKey(plain.privateKey);
    assert.equal(key.format, "openpgp");
    const payload = "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n\nä commit\n";
    const signature = await key.signCommit(payload);
    assert.match(signature, /^-----BEGIN PGP SIGNATURE-----\n\n[\s\S]+-----END PGP SIGNATURE-----\n$/);
    assert.equal(await verifies(info.publicKey, payload, signature), true);
    assert.equal(await verifies(info.publicKey, `${payload}x`, signature), false);
  });

  it("a passphrase-protected key needs its passphrase under passphrase, and the right one", async () => {
    // Plainly without one: refused at once, before the library reads it.
    assert.throws(
      () => openPgpSigningKey(protectedKey.privateKey),
      /protected by a passphrase and the Secret has none: put it under passphrase/,
    );
    await assert.rejects(readOpenPgpKey(protectedKey.privateKey), /put it under passphrase/);
    await assert.rejects(
      readOpenPgpKey(protectedKey.privateKey, "wrong"),
      /the passphrase under passphrase does not unlock the OpenPGP key/,
    );
    // The wrong one is only found by the library: at the first signature, never unsigned.
    await assert.rejects(
      openPgpSigningKey(protectedKey.privateKey, "wrong").signCommit("x"),
      /does not unlock/,
    );
    const info = await readOpenPgpKey(protectedKey.privateKey, "correct horse");
    const signature = await openPgpSigningKey(protectedKey.privateKey, "correct horse").signCommit("a\n");
    assert.equal(await verifies(info.publicKey, "a\n", signature), true);
  });

  it("a public key, an SSH key and text that is no key are refused, each saying what to store", async () => {
    assert.throws(
      () => checkOpenPgpKey(plain.publicKey),
      /an OpenPGP public key, which cannot sign: store the private key/,
    );
    await assert.rejects(readOpenPgpKey(plain.publicKey), /gpg --armor --export-secret-keys/);
    assert.throws(
      () => checkOpenPgpKey(generateSigningKey().privateKey),
      /an SSH or PEM key: set spec.commit.signing.format to ssh/,
    );
    assert.throws(() => checkOpenPgpKey("not a key"), /not an ASCII-armored OpenPGP private key/);
    const damaged = plain.privateKey.replace(/\n[A-Za-z0-9+/]{20}/, "\n!!!!");
    await assert.rejects(
      readOpenPgpKey(damaged),
      /the OpenPGP private key cannot be read \(.+\); export one/,
    );
  });

  it("looks at the first packet as the library does: an RSA key, protected or not", async () => {
    for (const passphrase of [undefined, "p"]) {
      const { privateKey } = await openpgp.generateKey({
        type: "rsa",
        rsaBits: 2048,
        userIDs,
        format: "armored",
        ...(passphrase ? { passphrase } : {}),
      });
      if (passphrase) assert.throws(() => checkOpenPgpKey(privateKey), /put it under passphrase/);
      else assert.doesNotThrow(() => checkOpenPgpKey(privateKey));
      assert.equal((await readOpenPgpKey(privateKey, passphrase)).algorithm, "RSA 2048");
    }
  });

  it("a passphrase is read as written, less the line break an editor leaves", () => {
    const data = (text: string) => ({ passphrase: Buffer.from(text).toString("base64") });
    assert.equal(signingPassphrase(data("s3cret\n")), "s3cret");
    assert.equal(signingPassphrase(data(" two words ")), " two words ");
    assert.equal(signingPassphrase(data("")), undefined);
    assert.equal(signingPassphrase(undefined), undefined);
  });
});

describe("SigningConfigured for an OpenPGP key", () => {
  const read = (text: string, passphrase?: string): SigningRead => ({
    kind: "key",
    secret: "signing",
    key: "signing-key",
    text,
    ...(passphrase ? { passphrase } : {}),
  });
  const decide = async (signing: SigningRead) =>
    decideSigning(signing, false, 4, {
      format: "openpgp",
      examined: await examineSigningKey(signing, "openpgp"),
    });

  it("a readable key signs: the armored public key is published, and the condition names its fingerprint", async () => {
    const { privateKey, publicKey } = await openpgp.generateKey({
      type: "ecc",
      curve: "curve25519Legacy",
      userIDs,
      passphrase: "p",
      format: "armored",
    });
    const fingerprint = (await openpgp.readKey({ armoredKey: publicKey })).getFingerprint().toUpperCase();
    const decision = await decide(read(privateKey, "p"));
    assert.equal(decision.kind, "ready");
    if (decision.kind !== "ready") return;
    assert.match(decision.publicKey, /^-----BEGIN PGP PUBLIC KEY BLOCK-----/);
    assert.equal(decision.condition.status, "True");
    assert.equal(decision.condition.observedGeneration, 4);
    assert.equal(
      decision.condition.message,
      `Every commit is signed with the OpenPGP key ${fingerprint} (Ed25519, GitOps Reverser <noreply@configbutler.ai>) in signing; register status.signingPublicKey with the Git host`,
    );
  });

  it("a key that cannot sign is CredentialsInvalid, saying why and what to do", async () => {
    const { privateKey, publicKey } = await openpgp.generateKey({
      type: "ecc",
      curve: "curve25519Legacy",
      userIDs,
      passphrase: "p",
      format: "armored",
    });
    for (const [signing, why] of [
      [read(privateKey), /protected by a passphrase and the Secret has none: put it under passphrase/],
      [read(privateKey, "q"), /does not unlock the OpenPGP key: put the right one there/],
      [read(publicKey), /public key, which cannot sign: store the private key instead/],
      [read("not a key"), /not an ASCII-armored OpenPGP private key; export one with gpg/],
    ] as const) {
      const decision = await decide(signing);
      assert.equal(decision.kind, "refused");
      if (decision.kind !== "refused") continue;
      assert.equal(decision.condition.reason, "CredentialsInvalid");
      assert.match(decision.condition.message, /^The signing key signing-key in signing cannot be used: /);
      assert.match(decision.condition.message, why);
      assert.match(decision.condition.message, /Nothing is committed until it can be read\.$/);
    }
  });

  it("no key is never generated for OpenPGP: the condition asks for an armored key", () => {
    const decision = decideSigning({ kind: "keyMissing", secret: "signing", key: "k" }, true, 1, {
      format: "openpgp",
    });
    assert.equal(decision.kind, "refused");
    if (decision.kind !== "refused") return;
    assert.equal(decision.condition.reason, "SigningKeyMissing");
    assert.match(decision.condition.message, /ASCII-armored OpenPGP private key .* under passphrase/);
    assert.doesNotMatch(decision.condition.message, /generateWhenMissing/);
  });
});
