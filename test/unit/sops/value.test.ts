import assert from "node:assert/strict";
import { createDecipheriv, randomBytes } from "node:crypto";
import { describe, it } from "node:test";
import { encryptedRegexFor, secretEncryptedRegex } from "../../../internal/sops/encrypt.ts";
import { encryptValue, macBytes } from "../../../internal/sops/value.ts";

/** Opens an ENC[...] value the way sops does: AES-256-GCM, the tag after the data. */
function open(value: string, key: Buffer, additionalData: string): { text: string; type: string } {
  const match = /^ENC\[AES256_GCM,data:(.*),iv:(.+),tag:(.+),type:(.+)\]$/.exec(value);
  assert.ok(match, `${value} is a sops value`);
  const [, data, iv, tag, type] = match;
  const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv!, "base64"));
  decipher.setAAD(Buffer.from(additionalData));
  decipher.setAuthTag(Buffer.from(tag!, "base64"));
  const text = Buffer.concat([decipher.update(Buffer.from(data!, "base64")), decipher.final()]).toString();
  return { text, type: type! };
}

describe("a sops value", () => {
  const key = randomBytes(32);

  it("is AES-256-GCM with a 32-byte nonce, bound to its path", () => {
    const value = encryptValue("hunter2", key, "data:password:");
    assert.equal(Buffer.from(/iv:([^,]+)/.exec(value)![1]!, "base64").length, 32);
    assert.deepEqual(open(value, key, "data:password:"), { text: "hunter2", type: "str" });
    assert.throws(() => open(value, key, "data:other:"), "another path does not open it");
  });

  it("an empty string stays empty, as sops leaves it", () => {
    assert.equal(encryptValue("", key, "data:x:"), "");
  });

  it("numbers and booleans carry the type and text Go reads them as", () => {
    assert.deepEqual(open(encryptValue(5432, key, "p:"), key, "p:"), { text: "5432", type: "int" });
    assert.deepEqual(open(encryptValue(0.25, key, "p:"), key, "p:"), { text: "0.25", type: "float" });
    assert.deepEqual(open(encryptValue(true, key, "p:"), key, "p:"), { text: "True", type: "bool" });
    assert.equal(macBytes(false).toString(), "False");
    assert.equal(macBytes(1e-7).toString(), "0.0000001", "Go's 'f' format has no exponent");
    assert.equal(macBytes(1.5e21).toString(), "1500000000000000000000");
    assert.equal(macBytes(-2.5e-3).toString(), "-0.0025");
  });
});

describe("which keys a sensitive document encrypts", () => {
  it("a Secret's data and stringData, as Flux recommends", () => {
    assert.equal(encryptedRegexFor({ apiVersion: "v1", kind: "Secret" }), secretEncryptedRegex);
  });

  it("another kind's every top-level key beside apiVersion, kind and metadata", () => {
    const regex = encryptedRegexFor({
      apiVersion: "x.io/v1",
      kind: "Token",
      metadata: {},
      spec: {},
      data: {},
    } as never);
    assert.equal(regex, "^(data|spec)$");
    assert.match("spec", new RegExp(regex));
    assert.doesNotMatch("metadata", new RegExp(regex));
  });
});
