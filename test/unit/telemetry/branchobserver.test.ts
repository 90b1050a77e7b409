// The branch workers' telemetry: each report a branch's observer hears is counted on the
// instrument docs/metrics.md names, with the GitBranch's or the GitTarget's labels, and the
// refusals, exclusions and healed files are logged.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Registry } from "prom-client";
import type { BranchObserver } from "../../../internal/git/worker/observer.ts";
import type { DecidedWrite } from "../../../internal/git/folder/writes.ts";
import { branchTelemetry } from "../../../internal/telemetry/branchobserver.ts";
import { registerInstruments } from "../../../internal/telemetry/instruments.ts";
import { recordingLogger } from "../../support/logger.ts";
import { configMapIdentity } from "../../support/streams.ts";

type Sample = { labels: Record<string, string>; value: number };

/** Every sample of `name` (without the prefix) whose labels name `namespace`. */
async function samples(name: string, namespace: string): Promise<Sample[]> {
  const registry = new Registry();
  registerInstruments(registry);
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === `gitopsreverser_${name}`);
  assert.ok(metric, `no metric ${name}`);
  return (metric as unknown as { values: Sample[] }).values.filter(
    (v) => v.labels.gitbranch_namespace === namespace || v.labels.gittarget_namespace === namespace,
  );
}

const write = (key: string, kind?: "user" | "serviceaccount"): DecidedWrite => ({
  target: { key, path: "clusters/dev", timers: { idleTimeoutMs: 0, maxDurationMs: 0 }, prune: "OnEvent" },
  reason: "live",
  changes: [],
  ...(kind ? { author: { name: "a", email: "a@example.com", kind, username: "a" } } : {}),
});

describe("a branch's telemetry", () => {
  it("counts what the worker reports of its branch with the GitBranch's labels", async () => {
    const observer: BranchObserver = branchTelemetry("obs-branch/main-writer", recordingLogger());
    observer.windowClosed("idle");
    observer.windowClosed("idle");
    observer.git({ operation: "fetch", outcome: "ok" });
    observer.git({ operation: "push", outcome: "landed" });
    observer.git({ operation: "cycle", outcome: "contended" });
    observer.queue("appended", 1);
    observer.queue("fenced", 1);
    observer.queue("replayed", 3);
    const branch = { gitbranch_namespace: "obs-branch", gitbranch_name: "main-writer" };
    assert.deepEqual(await samples("git_commit_windows_total", "obs-branch"), [
      { labels: { ...branch, close_reason: "idle" }, value: 2 },
    ]);
    assert.deepEqual(await samples("git_fetches_total", "obs-branch"), [
      { labels: { ...branch, outcome: "ok" }, value: 1 },
    ]);
    assert.deepEqual(await samples("git_pushes_total", "obs-branch"), [
      { labels: { ...branch, outcome: "landed" }, value: 1 },
    ]);
    assert.deepEqual(await samples("git_commit_failures_total", "obs-branch"), [
      { labels: { ...branch, reason: "contended" }, value: 1 },
    ]);
    assert.deepEqual(await samples("git_queue_appends_total", "obs-branch"), [
      { labels: { ...branch, outcome: "appended" }, value: 1 },
      { labels: { ...branch, outcome: "fenced" }, value: 1 },
    ]);
    assert.deepEqual(await samples("git_queue_replayed_total", "obs-branch"), [{ labels: branch, value: 3 }]);
  });

  it("counts what becomes of a GitTarget's writes with the GitTarget's labels, and logs refusals", async () => {
    const logger = recordingLogger();
    const observer: BranchObserver = branchTelemetry("obs-branch-2/main", logger);
    const target = { gittarget_namespace: "obs-target", gittarget_name: "t" };
    const secret = { ...configMapIdentity("s"), resource: "secrets", kind: "Secret" };
    observer.document(write("obs-target/t"), "created");
    observer.committed(write("obs-target/t", "serviceaccount"), "c1");
    observer.committed(write("obs-target/t"), "c2");
    observer.encrypted(write("obs-target/t"), secret, "encrypted");
    observer.refused(write("obs-target/t"), secret, "encryption_failed", "age refused");
    observer.dropped("obs-target/t", "render_fidelity_pending", 4);
    observer.placed("obs-target/t", { group: "", version: "v1", resource: "configmaps" }, "KustomizeRoot");
    observer.healed(write("obs-target/t"), configMapIdentity("h"), "a raw control character");
    assert.deepEqual(await samples("git_documents_total", "obs-target"), [
      { labels: { ...target, outcome: "created" }, value: 1 },
    ]);
    assert.deepEqual(await samples("git_commits_total", "obs-target"), [
      { labels: { ...target, author_kind: "serviceaccount" }, value: 1 },
      { labels: { ...target, author_kind: "none" }, value: 1 },
    ]);
    assert.deepEqual(await samples("secret_encryptions_total", "obs-target"), [
      { labels: { ...target, outcome: "encrypted" }, value: 1 },
      { labels: { ...target, outcome: "failed" }, value: 1 },
    ]);
    assert.deepEqual(await samples("placement_refusals_total", "obs-target"), [
      { labels: { ...target, reason: "encryption_failed" }, value: 1 },
    ]);
    assert.deepEqual(await samples("git_writes_dropped_total", "obs-target"), [
      { labels: { ...target, reason: "render_fidelity_pending" }, value: 4 },
    ]);
    assert.deepEqual(await samples("placements_total", "obs-target"), [
      {
        labels: { ...target, source: "kustomize", group: "", version: "v1", resource: "configmaps" },
        value: 1,
      },
    ]);
    assert.deepEqual(
      logger.lines.map((l) => [l.level, l.message, l.meta]),
      [
        [
          "error",
          "refused to write a resource",
          {
            gitTarget: "obs-target/t",
            resource: "/secrets",
            object: "apps/s",
            reason: "encryption_failed",
            message: "age refused",
          },
        ],
        [
          "warn",
          "rewrote a file Go's YAML readers refused, from the live object",
          { gitTarget: "obs-target/t", object: "ConfigMap apps/h", healed: "a raw control character" },
        ],
      ],
    );
  });

  it("logs and counts each object kept out of a coordinated folder", async () => {
    const logger = recordingLogger();
    branchTelemetry("obs-branch-3/main", logger).excluded("obs-excluded/t", [
      configMapIdentity("a"),
      configMapIdentity("b"),
    ]);
    assert.deepEqual(await samples("apply_ownership_conflicts_total", "obs-excluded"), [
      { labels: { gittarget_namespace: "obs-excluded", gittarget_name: "t" }, value: 2 },
    ]);
    assert.deepEqual(
      logger.lines.map((l) => [l.level, l.meta.object]),
      [
        ["info", "apps/a"],
        ["info", "apps/b"],
      ],
    );
  });
});
