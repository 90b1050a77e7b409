import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { subjectOf } from "../../support/pki.ts";
import { ownerPidOf } from "../../support/reaper.ts";
import { eventually, GiveUp } from "../../support/wait.ts";

describe("subjectOf", () => {
  it("puts each group in an O attribute and escapes slashes", () => {
    assert.equal(subjectOf("alice", ["system:masters", "a/b"]), "/O=system:masters/O=a\\/b/CN=alice");
  });
});

describe("ownerPidOf", () => {
  it("reads the owner's pid from a harness temp dir name", () => {
    assert.equal(ownerPidOf("controlplane-4242-Xy12ab"), 4242);
    assert.equal(ownerPidOf("unrelated"), undefined);
  });
});

describe("eventually", () => {
  it("returns the first truthy result", async () => {
    let calls = 0;
    assert.equal(await eventually(() => (++calls >= 3 ? "done" : undefined), { intervalMs: 1 }), "done");
    assert.equal(calls, 3);
  });

  it("looks less often as a wait goes on when it names no interval (100 ms, growing to 500 ms)", async () => {
    let calls = 0;
    await assert.rejects(
      eventually(() => (++calls, false), { timeoutMs: 2_000, description: "never" }),
      /timed out after 2000ms waiting for never/,
    );
    // At a fixed 100 ms it would look 21 times; growing, 100+120+144+…+500 fits 10 looks in 2 s.
    assert.ok(calls >= 2 && calls <= 11, `${calls} looks`);
  });

  it("times out naming the condition and the last error", async () => {
    await assert.rejects(
      eventually(
        () => {
          throw new Error("not yet");
        },
        { timeoutMs: 20, intervalMs: 5, description: "the thing" },
      ),
      /timed out after 20ms waiting for the thing: not yet/,
    );
  });

  it("stops at once on GiveUp", async () => {
    let calls = 0;
    await assert.rejects(
      eventually(
        () => {
          calls++;
          throw new GiveUp("process exited");
        },
        { timeoutMs: 10_000 },
      ),
      /process exited/,
    );
    assert.equal(calls, 1);
  });
});
