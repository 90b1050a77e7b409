// The harness's port pick: below the kernel's ephemeral range, where no outgoing connection of
// another test takes it between the pick and the server's bind.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { describe, it } from "node:test";
import { freePort } from "../../support/ports.ts";

const ephemeralLow = Number(
  readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0],
);

describe("a free port for a server another process binds", () => {
  it("is below the ephemeral range, and a server can bind it", async () => {
    for (let i = 0; i < 20; i++) {
      const port = await freePort();
      assert.ok(port >= 10_000 && port < ephemeralLow, `${port} is below ${ephemeralLow}`);
      const server = createServer();
      await new Promise<void>((resolve, reject) => {
        server.on("error", reject);
        server.listen(port, "127.0.0.1", resolve);
      });
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
