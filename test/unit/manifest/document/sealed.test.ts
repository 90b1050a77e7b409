import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { KubernetesObject } from "@kubernetes/client-node";
import { proofOf, proves, sealedFactsOf } from "../../../../internal/manifest/document/sealed.ts";

const object = (value: object) => value as KubernetesObject;
const secret = object({
  apiVersion: "v1",
  kind: "Secret",
  metadata: { name: "db" },
  data: { password: "aHVudGVy" },
});

describe("encrypted output is cached by metadata plus a digest of the plaintext", () => {
  it("the same object to the same recipients proves unchanged, in any key order", () => {
    const proof = proofOf(secret, ["age1a", "age1b"]);
    assert.equal(
      proves(
        proof,
        object({
          data: { password: "aHVudGVy" },
          kind: "Secret",
          metadata: { name: "db" },
          apiVersion: "v1",
        }),
        ["age1b", "age1a"],
      ),
      true,
    );
  });

  it("a changed value, or another recipient list, does not", () => {
    const proof = proofOf(secret, ["age1a"]);
    assert.equal(proves(proof, object({ ...secret, data: { password: "b3RoZXI=" } }), ["age1a"]), false);
    assert.equal(proves(proof, secret, ["age1a", "age1b"]), false);
    assert.equal(proves(undefined, secret, ["age1a"]), false, "a document the operator did not write");
  });

  it("holds no plaintext and no unsalted digest of it", () => {
    const [one, two] = [proofOf(secret, ["age1a"]), proofOf(secret, ["age1a"])];
    assert.notEqual(one!.digest, two!.digest, "salted");
    assert.doesNotMatch(JSON.stringify(one), /aHVudGVy|hunter/);
  });
});

describe("a SOPS document is known by its sops metadata", () => {
  it("names its recipients", () => {
    const facts = sealedFactsOf({
      ...secret,
      sops: { mac: "ENC[...]", age: [{ recipient: "age1a", enc: "x" }] },
    });
    assert.deepEqual(facts, { recipients: ["age1a"] });
  });

  it("a plaintext document is not one", () => {
    assert.equal(sealedFactsOf(secret), undefined);
    assert.equal(sealedFactsOf({ ...secret, sops: "not metadata" }), undefined);
  });
});
