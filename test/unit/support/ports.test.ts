// The harness's port pick: below the kernel's ephemeral range, where no outgoing connection of
// another test takes it between the pick and the server's bind.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { claimPort, freePort, lostPort, startOnChosenPorts } from "../../support/ports.ts";
import { typeScript } from "../../support/binaries.ts";

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

describe("a port one test process picked", () => {
  /** Whether another process, beside this one, may claim `port`. */
  const claimedElsewhere = (port: number) => {
    const module = new URL("../../support/ports.ts", import.meta.url).href;
    const script = `const { claimPort } = await import(${JSON.stringify(module)}); console.log(claimPort(${port}));`;
    return execFileSync(process.execPath, [...typeScript, "--input-type=module", "-e", script])
      .toString()
      .trim();
  };

  it("is picked by no other test process while the one that picked it lives", async () => {
    const port = await freePort();
    assert.equal(
      readFileSync(join(tmpdir(), "gitops-reverser-ports", String(port)), "utf8"),
      String(process.pid),
    );
    assert.equal(claimedElsewhere(port), "false");
    assert.equal(claimPort(port), false, "nor twice by the one that picked it");
  });

  it("is given back when that process exits, and taken over from one killed before it could", () => {
    const module = new URL("../../support/ports.ts", import.meta.url).href;
    const pickIn = (then: string) =>
      Number(
        spawnSync(process.execPath, [
          ...typeScript,
          "--input-type=module",
          "-e",
          `const { freePort } = await import(${JSON.stringify(module)}); console.log(await freePort()); ${then}`,
        ]).stdout.toString(),
      );
    assert.equal(claimPort(pickIn("")), true, "a process that exits gives its ports back");
    assert.equal(
      claimPort(pickIn("process.kill(process.pid, 'SIGKILL');")),
      true,
      "a killed one's claim is stale",
    );
  });

  it("is cleared of a killed process's claims by the next process's first pick, not left to pile up", async () => {
    const module = new URL("../../support/ports.ts", import.meta.url).href;
    const killed = Number(
      spawnSync(process.execPath, [
        ...typeScript,
        "--input-type=module",
        "-e",
        `const { freePort } = await import(${JSON.stringify(module)}); console.log(await freePort()); process.kill(process.pid, 'SIGKILL');`,
      ]).stdout.toString(),
    );
    const stale = join(tmpdir(), "gitops-reverser-ports", String(killed));
    assert.ok(existsSync(stale), "the killed process left its claim");
    assert.equal(claimedElsewhere(await freePort()), "false");
    assert.ok(!existsSync(stale), "the next process's first claim removed it");
  });
});

describe("a daemon started on chosen ports", () => {
  it("is started again when its log says it could not bind, up to three times; any other failure ends the start at once", async () => {
    const bindErrors = [
      "redis-server exited (code 1); last log lines:\n# Could not create server TCP listening socket 127.0.0.1:2345: bind: Address already in use",
      "sshd exited (code 255); last log lines:\nBind to port 2345 on 127.0.0.1 failed: Address already in use.\nCannot bind any address.",
      "kube-apiserver exited: failed to listen on 127.0.0.1:2345: listen tcp 127.0.0.1:2345: bind: address already in use",
    ];
    for (const message of bindErrors) assert.ok(lostPort(new Error(message)), message);
    assert.ok(!lostPort(new Error("timed out after 15000ms waiting for sshd to listen")));

    let tries = 0;
    assert.equal(
      await startOnChosenPorts(() =>
        ++tries < 3 ? Promise.reject(new Error(bindErrors[0])) : Promise.resolve("started"),
      ),
      "started",
    );
    assert.equal(tries, 3);

    tries = 0;
    await assert.rejects(
      startOnChosenPorts(() => (tries++, Promise.reject(new Error(bindErrors[1])))),
      /Cannot bind any address/,
    );
    assert.equal(tries, 3, "the third lost port ends it");

    tries = 0;
    await assert.rejects(
      startOnChosenPorts(() => (tries++, Promise.reject(new Error("the binary is missing")))),
      /missing/,
    );
    assert.equal(tries, 1, "anything else ends it at once");
  });
});
