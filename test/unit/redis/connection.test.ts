import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { accessProblemOf, parseRedisAddress } from "../../../internal/redis/connection.ts";

describe("--redis-addr", () => {
  it("takes host:port, a bracketed IPv6 address, or a bare host on 6379", () => {
    assert.deepEqual(parseRedisAddress("redis.infra:6380"), { host: "redis.infra", port: 6380, tls: false });
    assert.deepEqual(parseRedisAddress("rediss://redis.infra:6380"), {
      host: "redis.infra",
      port: 6380,
      tls: true,
    });
    assert.deepEqual(parseRedisAddress("redis://redis.infra"), {
      host: "redis.infra",
      port: 6379,
      tls: false,
    });
    assert.deepEqual(parseRedisAddress("[::1]:6379"), { host: "::1", port: 6379, tls: false });
    assert.deepEqual(parseRedisAddress("valkey"), { host: "valkey", port: 6379, tls: false });
  });

  it("refuses what is not an address, saying the form it takes", () => {
    assert.throws(() => parseRedisAddress("redis:http"), /use host:port/);
    assert.throws(() => parseRedisAddress("redis:70000"), /use host:port/);
  });
});

describe("a Redis error about access", () => {
  it("says what to set, and leaves an outage to the retries", () => {
    assert.match(
      accessProblemOf("NOAUTH Authentication required.") ?? "",
      /asks for a password.*--redis-password/,
    );
    assert.match(
      accessProblemOf("WRONGPASS invalid username-password pair or user is disabled.") ?? "",
      /refused the username and password/,
    );
    assert.match(accessProblemOf("self-signed certificate in certificate chain") ?? "", /--redis-ca-file/);
    assert.equal(accessProblemOf("connect ECONNREFUSED 127.0.0.1:6379"), undefined);
  });
});
