import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { directoriesIn, ownerAlive, sweepRemoves } from "../../../internal/git/workerdirs.ts";

const owner = { pid: 4242, startTime: "1000", bootId: "boot-a" };

describe("who owns a clone directory under the worker root", () => {
  it("an owner whose pid runs, started when the owner file says, is alive", () => {
    assert.equal(ownerAlive(owner, "boot-a", { running: true, startTime: "1000" }), true);
  });

  it("an owner whose pid runs nothing is dead", () => {
    assert.equal(ownerAlive(owner, "boot-a", { running: false }), false);
  });

  it("an owner whose pid now runs a process started at another time is dead", () => {
    assert.equal(ownerAlive(owner, "boot-a", { running: true, startTime: "2000" }), false);
  });

  it("an owner from before a reboot is dead, whatever runs under its pid now", () => {
    assert.equal(ownerAlive(owner, "boot-b", { running: true, startTime: "1000" }), false);
  });

  it("where the host cannot tell start times, a running pid is taken for the owner", () => {
    assert.equal(ownerAlive({ ...owner, startTime: "", bootId: "" }, "", { running: true }), true);
  });

  it("the sweep removes only a directory no worker uses, no GitBranch names and no running process owns", () => {
    const free = { inUse: false, namedByGitBranch: false };
    assert.equal(sweepRemoves({ ...free, owner: "none" }), true);
    assert.equal(sweepRemoves({ ...free, owner: "dead" }), true);
    assert.equal(sweepRemoves({ ...free, owner: "self" }), true);
    assert.equal(sweepRemoves({ ...free, owner: "live" }), false);
    assert.equal(sweepRemoves({ ...free, inUse: true, owner: "self" }), false);
    assert.equal(sweepRemoves({ ...free, namedByGitBranch: true, owner: "dead" }), false);
  });

  it("names each directory once, by its uid, from the directory or its owner file, and skips staged claims", () => {
    assert.deepEqual([...directoriesIn(["a", "a.owner", "b.owner", "c", ".d.owner.12"])].sort(), [
      "a",
      "b",
      "c",
    ]);
  });
});
