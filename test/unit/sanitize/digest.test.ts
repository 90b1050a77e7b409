import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { canonicalJson, contentDigest } from "../../../internal/sanitize/digest.ts";

describe("the content digest", () => {
  it("is the same for equal values whatever order their keys came in", () => {
    const a = { metadata: { name: "x", labels: { b: "2", a: "1" } }, data: { k: "v" } };
    const b = { data: { k: "v" }, metadata: { labels: { a: "1", b: "2" }, name: "x" } };
    assert.equal(canonicalJson(a), canonicalJson(b));
    assert.equal(contentDigest(a), contentDigest(b));
  });

  it("differs when a value, a type, or an array's order differs", () => {
    const base = contentDigest({ spec: { ports: [80, 443], replicas: 3 } });
    assert.notEqual(contentDigest({ spec: { ports: [443, 80], replicas: 3 } }), base);
    assert.notEqual(contentDigest({ spec: { ports: [80, 443], replicas: "3" } }), base);
    assert.notEqual(contentDigest({ spec: { ports: [80, 443], replicas: 4 } }), base);
  });

  it("leaves out undefined members, as JSON does", () => {
    assert.equal(canonicalJson({ a: 1, b: undefined }), canonicalJson({ a: 1 }));
    assert.equal(canonicalJson([1, undefined]), "[1,null]");
  });
});
