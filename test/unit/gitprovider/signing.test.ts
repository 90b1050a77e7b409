import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { decideSigning } from "../../../internal/gitprovider/signing.ts";
import { generateSigningKey } from "../../../internal/signing/sshkey.ts";

describe("commits use OpenSSH signatures, with the key read from the signing Secret or generated when configured", () => {
  it("a readable key signs, and its public half is published", () => {
    const { privateKey, publicKey } = generateSigningKey();
    const decision = decideSigning(
      { kind: "key", secret: "signing", key: "signing-key", text: privateKey },
      false,
      3,
    );
    assert.equal(decision.kind, "ready");
    if (decision.kind !== "ready") return;
    assert.equal(decision.publicKey, publicKey.split(" ").slice(0, 2).join(" "));
    assert.equal(decision.condition.status, "True");
    assert.equal(decision.condition.observedGeneration, 3);
  });

  it("a signing Secret the install may not read is refused with how to grant it, and never generated over", () => {
    const message =
      "The operator may not read Secret team-a/signing (403 Forbidden): add team-a to secretNamespaces.";
    const decision = decideSigning({ kind: "forbidden", secret: "signing", message }, true, 2);
    assert.equal(decision.kind, "refused");
    if (decision.kind !== "refused") return;
    assert.equal(decision.condition.status, "False");
    assert.match(decision.condition.message, /403 Forbidden.*secretNamespaces.*Nothing is committed/);
  });

  it("no key, with generateWhenMissing, generates one: into a new Secret, or into the one there is", () => {
    assert.deepEqual(decideSigning({ kind: "secretNotFound", secret: "signing" }, true, 1), {
      kind: "generate",
      create: true,
    });
    assert.deepEqual(decideSigning({ kind: "keyMissing", secret: "signing", key: "k" }, true, 1), {
      kind: "generate",
      create: false,
    });
  });

  it("no key, without it, is refused: SecretNotFound or SigningKeyMissing, saying what to do", () => {
    const gone = decideSigning({ kind: "secretNotFound", secret: "signing" }, false, 1);
    assert.equal(gone.kind === "refused" && gone.condition.reason, "SecretNotFound");
    const empty = decideSigning({ kind: "keyMissing", secret: "signing", key: "k" }, false, 1);
    assert.equal(empty.kind === "refused" && empty.condition.reason, "SigningKeyMissing");
    assert.match(empty.kind === "refused" ? empty.condition.message : "", /generateWhenMissing: true/);
  });

  it("a key that cannot be read is refused, never replaced", () => {
    const decision = decideSigning({ kind: "key", secret: "signing", key: "k", text: "not a key" }, true, 1);
    assert.equal(decision.kind, "refused", "generateWhenMissing does not overwrite a key it cannot read");
    assert.equal(decision.kind === "refused" && decision.condition.reason, "CredentialsInvalid");
  });
});
