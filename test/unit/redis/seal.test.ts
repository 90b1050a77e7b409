import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { EntrySeal } from "../../../internal/redis/seal.ts";

describe("the signature on a Redis stream entry (--redis-hmac-key)", () => {
  const seal = new EntrySeal("the replicas' key");
  const stream = "gitopsreverser:writes:apps/main";

  it("an entry the operator wrote passes, in its own stream only", () => {
    const fields = ["write", "{}", ...seal.fields(stream, "{}")];
    assert.equal(seal.refusal(stream, "{}", fields), undefined);
    assert.match(
      seal.refusal("gitopsreverser:writes:other/main", "{}", fields) ?? "",
      /not one of the operator's key/,
    );
  });

  it("an unsigned entry, another key's, or a signed entry's value changed is refused", () => {
    assert.match(seal.refusal(stream, "{}", ["write", "{}"]) ?? "", /no signature/);
    const other = new EntrySeal("another key").fields(stream, "{}");
    assert.match(
      seal.refusal(stream, "{}", ["write", "{}", ...other]) ?? "",
      /not one of the operator's key/,
    );
    const signed = seal.fields(stream, "{}");
    assert.match(seal.refusal(stream, '{"x":1}', ["write", '{"x":1}', ...signed]) ?? "", /not one/);
    assert.match(seal.refusal(stream, "{}", ["write", "{}", "sig", "zz"]) ?? "", /not one/);
  });

  it("without a key, nothing is signed and every entry is taken, as before", () => {
    const open = new EntrySeal(undefined);
    assert.deepEqual(open.fields(stream, "{}"), []);
    assert.equal(open.refusal(stream, "{}", ["write", "{}"]), undefined);
  });
});
