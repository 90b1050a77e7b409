// `make run` against a user's cluster judges kustomize folders with the pinned kustomize, as
// `make demo` does, without a flag from the user (issue: promises kept, item 5).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { describe, it } from "node:test";
import { kustomizeBinary, repoRoot } from "../../support/binaries.ts";

describe("make run", () => {
  it("builds the pinned kustomize first and passes it to the operator with --kustomize-path", () => {
    const commands = execFileSync("make", ["-n", "run"], { cwd: repoRoot, encoding: "utf8" })
      .trim()
      .split("\n");
    const build = commands.indexOf("bash hack/tools/gotool.sh kustomize");
    const run = commands.findIndex((c) => c.startsWith("node --import ./hack/register.ts cmd/operator.ts"));
    assert.ok(
      build >= 0 && run > build,
      `kustomize is built before the operator runs:\n${commands.join("\n")}`,
    );
    const flag = /--kustomize-path=\$\((bash hack\/tools\/gotool\.sh kustomize --print-path)\)/.exec(
      commands[run]!,
    );
    assert.ok(flag, commands[run]);
    // The path that command prints is the pinned kustomize the tests and the demo run.
    const printed = execFileSync("bash", ["-c", flag[1]!], { cwd: repoRoot, encoding: "utf8" }).trim();
    assert.equal(printed, kustomizeBinary());
  });
});
