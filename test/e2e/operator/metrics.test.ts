// The metrics surface: every instrument the operator registers has its row in docs/metrics.md and
// every row names one it registers, and a change mirrored end to end shows on the families that
// follow it, labeled by the configuration objects that carried it (never the mirrored object).
// What is read is the registry's exposition, the text /metrics serves.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Registry } from "prom-client";
import { registerInstruments } from "../../../internal/telemetry/instruments.ts";
import { createRegistry, leaderGauge } from "../../../internal/telemetry/metrics.ts";
import { declaredMetrics, documentedMetrics, runtimeMetric } from "../../support/metricsdoc.ts";
import { applyMirror } from "../../support/mirror.ts";
import { mirrorUser, startMirrorEnvironment, type MirrorEnvironment } from "../../support/mirrorenv.ts";
import { eventually } from "../../support/wait.ts";

const namespace = "metered";
const folder = "clusters/metered";

/** The operator's registry as the process builds it: Node's runtime metrics, our instruments, the leader gauge. */
function operatorRegistry(): Registry {
  const registry = createRegistry();
  registerInstruments(registry);
  leaderGauge(registry, () => true);
  return registry;
}

/** The value of the first sample of `name` whose labels include every one of `labels`. */
function sample(exposition: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of exposition.split("\n")) {
    const match = /^(\S+?)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries(
      [...(match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1]!, m[2]!]),
    );
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) return Number(match[3]);
  }
  return undefined;
}

describe("the metrics surface", () => {
  it("every instrument the operator registers is documented in docs/metrics.md, and every documented one is served", async () => {
    const served = [...declaredMetrics(await operatorRegistry().metrics())].filter(
      (n) => !runtimeMetric.test(n),
    );
    const rows = documentedMetrics();
    assert.ok(served.length > 40, `the registry declares our instruments (${served.length})`);
    assert.deepEqual(
      served.filter((n) => !rows.has(n)),
      [],
      "every instrument served has its row in docs/metrics.md",
    );
    assert.deepEqual(
      [...rows].filter((n) => !served.includes(n)),
      [],
      "every row of docs/metrics.md names an instrument the operator serves",
    );
  });

  describe("a change mirrored end to end", () => {
    let env: MirrorEnvironment;
    const registry = operatorRegistry();
    const target = { gittarget_namespace: namespace, gittarget_name: "metered" };
    const branch = { gitbranch_namespace: namespace, gitbranch_name: "main" };

    before(async () => {
      env = await startMirrorEnvironment([namespace]);
      await applyMirror(env.kc, namespace, env.url, mirrorUser, [
        { name: "metered", path: folder, rules: [{ apiGroups: [""], resources: ["configmaps"] }] },
      ]);
    });
    after(async () => {
      await env?.stop();
    });

    it("shows on the watch, document, commit and push families with its GitTarget's and GitBranch's labels", async () => {
      const { core, git } = env;
      await core.createNamespacedConfigMap({
        namespace,
        body: { metadata: { name: "settings", namespace }, data: { mode: "fast" } },
      });
      await eventually(
        async () =>
          (await git.fileAt("state", "main", `${folder}/${namespace}/configmaps/settings.yaml`)) !==
          undefined,
        {
          timeoutMs: 60_000,
          description: "the ConfigMap in Git",
        },
      );
      await core.patchNamespacedConfigMap({
        namespace,
        name: "settings",
        body: [{ op: "replace", path: "/data/mode", value: "slow" }],
      });
      await eventually(
        async () =>
          (await git.fileAt("state", "main", `${folder}/${namespace}/configmaps/settings.yaml`))?.includes(
            "slow",
          ) === true,
        { timeoutMs: 60_000, description: "the edit in Git" },
      );
      // The counters of a push are counted once git's push returns, which may be after the
      // server shows the commit: what is expected is waited for, and what is missing named.
      const expected: [string, Record<string, string>, number][] = [];
      const expect = (name: string, labels: Record<string, string>, atLeast = 1) =>
        void expected.push([name, labels, atLeast]);
      const configmaps = { group: "", resource: "configmaps" };
      // A live edit routed; the snapshot's objects counted as its replay, not as events.
      expect("gitopsreverser_watch_events_total", {
        ...target,
        ...configmaps,
        event_type: "MODIFIED",
        outcome: "routed",
      });
      expect("gitopsreverser_watch_replays_total", { ...target, mode: "watchlist" });
      expect("gitopsreverser_watch_event_handling_seconds_count", target);
      expect("gitopsreverser_watch_sessions_total", { ...target, start: "initial" });
      expect("gitopsreverser_watch_open_streams", { ...target, state: "Running" });
      expect("gitopsreverser_watch_resolved_types", { ...target, resolution: "resolved" });
      expect("gitopsreverser_watch_plan_passes_total", { ...target, trigger: "served" });
      expect("gitopsreverser_watch_plan_changes_total", { ...target, action: "started" });
      expect("gitopsreverser_api_catalog_refreshes_total", { source_cluster: `${namespace}/self` });
      expect("gitopsreverser_api_catalog_resources", { source_cluster: `${namespace}/self` }, 10);
      // The document created, then updated; committed and pushed on the branch that writes it.
      expect("gitopsreverser_git_documents_total", { ...target, outcome: "created" });
      expect("gitopsreverser_git_documents_total", { ...target, outcome: "updated" });
      expect("gitopsreverser_git_commits_total", { ...target, author_kind: "none" }, 2);
      expect("gitopsreverser_git_pushes_total", { ...branch, outcome: "landed" }, 2);
      expect("gitopsreverser_git_fetches_total", { ...branch, outcome: "ok" });
      expect("gitopsreverser_git_branch_targets", { ...branch, ...target });
      expect("gitopsreverser_git_retained_writes", branch, 0);
      expect("gitopsreverser_git_intake_paused", branch, 0);
      expect("gitopsreverser_resource_condition", {
        resource_kind: "GitBranch",
        resource_namespace: namespace,
        resource_name: "main",
        condition: "Ready",
        status: "True",
      });
      let missing: string[] = [];
      const text = await eventually(
        async () => {
          const exposition = await registry.metrics();
          missing = expected
            .map(
              ([name, labels, atLeast]) => [name, labels, atLeast, sample(exposition, name, labels)] as const,
            )
            .filter(([, , atLeast, value]) => value === undefined || value < atLeast)
            .map(
              ([name, labels, atLeast, value]) => `${name}${JSON.stringify(labels)} >= ${atLeast} (${value})`,
            );
          return missing.length === 0 ? exposition : undefined;
        },
        { description: "every family to show the change" },
      ).catch((err: unknown) => assert.fail(`${String(err)}: ${missing.join("; ")}`));
      // The mirrored object is never a label.
      assert.ok(!text.includes('"settings"'), "no series names the mirrored ConfigMap");
    });
  });
});
