import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { RedisServer } from "../support/redis.ts";

describe("redis harness", () => {
  let redis: RedisServer;

  before(async () => {
    redis = await RedisServer.start();
  });
  after(async () => {
    await redis?.stop();
  });

  it("answers PING on its loopback address, without persistence", async () => {
    const client = redis.client();
    try {
      assert.equal(await client.ping(), "PONG");
      assert.match(redis.address, /^127\.0\.0\.1:\d+$/);
      assert.deepEqual(await client.config("GET", "save"), ["save", ""]);
      assert.deepEqual(await client.config("GET", "appendonly"), ["appendonly", "no"]);
    } finally {
      client.disconnect();
    }
  });
});
