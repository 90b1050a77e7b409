import assert from "node:assert/strict";
import { createPublicKey, generateKeyPairSync, verify } from "node:crypto";
import { describe, it } from "node:test";
import { generateSigningKey, readSigningKey } from "../../../internal/signing/sshkey.ts";
import { WireReader } from "../../../internal/signing/wire.ts";

describe("an SSH signing key", () => {
  it("a generated key reads back as the same key, in OpenSSH's own format", () => {
    const { privateKey, publicKey } = generateSigningKey("me");
    assert.match(privateKey, /^-----BEGIN OPENSSH PRIVATE KEY-----\n/);
    assert.equal(`${readSigningKey(privateKey).publicKey} me`, publicKey);
  });

  it("signs so that its public key verifies", () => {
    const key = readSigningKey(generateSigningKey().privateKey);
    const blob = new WireReader(key.sign(Buffer.from("payload")));
    assert.equal(blob.text(), "ssh-ed25519");
    const signature = blob.string();
    const publicBlob = new WireReader(key.publicBlob);
    publicBlob.text();
    const raw = publicBlob.string();
    const pub = createPublicKey({
      key: { kty: "OKP", crv: "Ed25519", x: raw.toString("base64url") },
      format: "jwk",
    });
    assert.equal(verify(null, Buffer.from("payload"), pub, signature), true);
  });

  it("reads a PEM key, and names an RSA key's signature rsa-sha2-512", () => {
    const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const key = readSigningKey(privateKey.export({ format: "pem", type: "pkcs8" }).toString());
    assert.match(key.publicKey, /^ssh-rsa AAAA/);
    assert.equal(new WireReader(key.sign(Buffer.from("x"))).text(), "rsa-sha2-512");
  });

  it("refuses what it cannot sign with, saying why", () => {
    assert.throws(() => readSigningKey("not a key"), /not an OpenSSH or PEM private key/);
    const { privateKey } = generateKeyPairSync("ed25519");
    const encrypted = privateKey.export({
      format: "pem",
      type: "pkcs8",
      cipher: "aes-256-cbc",
      passphrase: "p",
    });
    assert.throws(() => readSigningKey(encrypted.toString()), /encrypted with a passphrase/);
  });
});
