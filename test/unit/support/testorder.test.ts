// The order make test starts its files in, and the tools a set of files needs built.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { loadDurations, longestFirst, saveDurations } from "../../support/testorder.ts";
import { needs, reached } from "../../../hack/tools/needs.ts";

describe("the order make test starts its files in", () => {
  it("is the longest first, a file not measured yet taken as a minute (end to end) or a second (unit), equal ones by name", () => {
    const durations = { "test/e2e/a.test.ts": 300, "test/e2e/b.test.ts": 20, "test/unit/c.test.ts": 2 };
    assert.deepEqual(
      longestFirst(
        [
          "test/unit/c.test.ts",
          "test/unit/new.test.ts",
          "test/e2e/b.test.ts",
          "test/e2e/new.test.ts",
          "test/e2e/a.test.ts",
        ],
        durations,
      ),
      [
        "test/e2e/a.test.ts",
        "test/e2e/new.test.ts",
        "test/e2e/b.test.ts",
        "test/unit/c.test.ts",
        "test/unit/new.test.ts",
      ],
    );
  });

  it("takes this machine's last times over the committed ones, and keeps a run's times over those kept before", () => {
    const dir = mkdtempSync(join(tmpdir(), "testorder-"));
    const committed = join(dir, "durations.json");
    const cached = join(dir, "cache", "test-durations.json");
    saveDurations(new Map([["test/e2e/a.test.ts", 12_340]]), committed);
    saveDurations(new Map([["test/e2e/b.test.ts", 5_000]]), cached);
    saveDurations(new Map([["test/e2e/a.test.ts", 99_000]]), cached);
    assert.deepEqual(JSON.parse(readFileSync(cached, "utf8")), {
      "test/e2e/a.test.ts": 99,
      "test/e2e/b.test.ts": 5,
    });
    assert.deepEqual(loadDurations(committed, cached), { "test/e2e/a.test.ts": 99, "test/e2e/b.test.ts": 5 });
    assert.deepEqual(loadDurations(committed, join(dir, "none.json")), { "test/e2e/a.test.ts": 12.3 });
  });
});

describe("the tools a set of test files needs", () => {
  it("follows the files' imports to the calls that find each tool, and names none for a file that calls none", () => {
    assert.deepEqual(needs(reached(["test/unit/applier/decide/due.test.ts"])), []);
    assert.deepEqual(needs(reached(["test/e2e/packaging/chart.test.ts"])), ["testenv", "helm"]);
    assert.ok(needs(reached(["test/e2e/flux/apply.test.ts"])).includes("flux"));
    // notification-controller is built only for the files that run it, not for every Flux test.
    assert.ok(!needs(reached(["test/e2e/flux/apply.test.ts"])).includes("flux-notification"));
    assert.ok(!needs(reached(["test/e2e/flux/controllers.test.ts"])).includes("flux-notification"));
    assert.deepEqual(
      needs(reached(["test/e2e/flux/notification.test.ts"])).filter((tool) => tool.startsWith("flux")),
      ["flux", "flux-notification"],
    );
    assert.ok(needs(reached(["test/e2e/argocd/claim.test.ts"])).includes("argocd"));
  });
});
