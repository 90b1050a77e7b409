import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { expectedRetry } from "../../../internal/operator/informer.ts";

describe("an informer's retry the runtime expects", () => {
  it("is the API server starting to serve a kind: its watch cache initializing, or a 429 or 503", () => {
    assert.equal(expectedRetry(new Error("storage is (re)initializing")), true);
    assert.equal(expectedRetry(Object.assign(new Error("Too Many Requests"), { code: 429 })), true);
    assert.equal(expectedRetry(Object.assign(new Error("Service Unavailable"), { code: 503 })), true);
  });

  it("anything else is a fault, logged as an error", () => {
    assert.equal(expectedRetry(Object.assign(new Error("Forbidden"), { code: 403 })), false);
    assert.equal(expectedRetry(new Error("connect ECONNREFUSED 127.0.0.1:6443")), false);
  });
});
