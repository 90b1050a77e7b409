import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { describe, it } from "node:test";
import { createLogger, type LogLevel } from "../../../internal/telemetry/logger.ts";

/** The levels of the lines a logger at `level` writes when one line of each level is logged. */
async function written(level: LogLevel): Promise<string[]> {
  const stream = new PassThrough();
  const chunks: string[] = [];
  stream.on("data", (chunk: Buffer) => chunks.push(chunk.toString("utf8")));
  const logger = createLogger(level, "json", stream);
  logger.debug("d", { n: 1 });
  logger.info("i", { n: 2 });
  logger.warn("w", { n: 3 });
  logger.error("e", { n: 4 });
  await new Promise<void>((resolve) => {
    logger.on("finish", resolve);
    logger.end();
  });
  return chunks
    .join("")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => (JSON.parse(line) as { level: string }).level);
}

describe("--log-level", () => {
  it("warn drops info and debug", async () => {
    assert.deepEqual(await written("warn"), ["warn", "error"]);
  });

  it("error keeps only errors, info drops debug", async () => {
    assert.deepEqual(await written("error"), ["error"]);
    assert.deepEqual(await written("info"), ["info", "warn", "error"]);
  });

  it("debug keeps every level", async () => {
    assert.deepEqual(await written("debug"), ["debug", "info", "warn", "error"]);
  });

  it("a line below the level is dropped before it is serialized", async () => {
    let serialized = 0;
    const field = { toJSON: () => (serialized++, "value") };
    const logger = createLogger("info", "json", new PassThrough());
    for (let i = 0; i < 100; i++) logger.debug("routed", { field });
    logger.info("kept", { field });
    await new Promise<void>((resolve) => {
      logger.on("finish", resolve);
      logger.end();
    });
    assert.equal(serialized, 1);
  });

  it("a JSON line carries the message and the fields", async () => {
    const stream = new PassThrough();
    const logger = createLogger("info", "json", stream);
    const line = new Promise<string>((resolve) => stream.once("data", (c: Buffer) => resolve(c.toString())));
    logger.info("reconciled", { controller: "gittarget", object: "team-a/apps", reconcileID: "r1" });
    const parsed = JSON.parse(await line) as Record<string, unknown>;
    assert.equal(parsed.message, "reconciled");
    assert.equal(parsed.controller, "gittarget");
    assert.equal(parsed.object, "team-a/apps");
    assert.equal(parsed.reconcileID, "r1");
    logger.end();
  });
});
