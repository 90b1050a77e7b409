import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseRedisAddress } from "../../../internal/redis/connection.ts";

describe("--redis-addr", () => {
  it("takes host:port, a bracketed IPv6 address, or a bare host on 6379", () => {
    assert.deepEqual(parseRedisAddress("redis.infra:6380"), { host: "redis.infra", port: 6380 });
    assert.deepEqual(parseRedisAddress("[::1]:6379"), { host: "::1", port: 6379 });
    assert.deepEqual(parseRedisAddress("valkey"), { host: "valkey", port: 6379 });
  });

  it("refuses what is not an address, saying the form it takes", () => {
    assert.throws(() => parseRedisAddress("redis:http"), /use host:port/);
    assert.throws(() => parseRedisAddress("redis:70000"), /use host:port/);
  });
});
