// The process's servers say where they listen: a bind address with port 0 takes the kernel's
// pick, and only the "serving" line tells which port that was.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Registry } from "prom-client";
import { serveMetrics, serveProbes } from "../../../internal/telemetry/servers.ts";
import { recordingLogger } from "../../support/logger.ts";

describe("the process's servers", () => {
  it("a server asked for port 0 logs the port it took, and answers there", async () => {
    const logger = recordingLogger();
    const probes = await serveProbes({}, { host: "127.0.0.1", port: 0 }, logger);
    const metrics = await serveMetrics(
      new Registry(),
      { host: "127.0.0.1", port: 0 },
      { secure: false },
      logger,
    );
    try {
      const served = (server: string) => {
        const line = logger.lines.find((l) => l.message === "serving" && l.meta.server === server);
        assert.equal(line?.level, "info", `a serving line for ${server}`);
        const address = String(line.meta.address);
        assert.match(address, /^127\.0\.0\.1:[1-9]\d*$/);
        return address;
      };
      assert.equal((await fetch(`http://${served("probes")}/healthz`)).status, 200);
      assert.equal((await fetch(`http://${served("metrics")}/metrics`)).status, 200);
    } finally {
      probes.close();
      metrics.close();
    }
  });
});
