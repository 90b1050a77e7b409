// A collection watch's meter: a recovery is counted only for a connection that follows one that
// ended on an error or 410, by whether it resumed from the cursor or replayed a snapshot.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Registry } from "prom-client";
import { watchRecoveries, watchSessionEnds } from "../../../internal/telemetry/instruments.ts";
import { WatchMeter } from "../../../internal/watch/meter.ts";
import type { Collection } from "../../../internal/stream/collection.ts";

const collection: Collection = {
  key: "/configmaps@team",
  group: "",
  version: "v1",
  resource: "configmaps",
  kind: "ConfigMap",
  namespaced: true,
  namespace: "team",
  labelSelector: "",
};

async function recoveries(target: string): Promise<Record<string, number>> {
  const registry = new Registry();
  registry.registerMetric(watchRecoveries);
  const metric = (await registry.getMetricsAsJSON())[0]!;
  const values = (metric as { values: { labels: Record<string, string>; value: number }[] }).values;
  return Object.fromEntries(
    values.filter((v) => v.labels.gittarget_name === target).map((v) => [v.labels.mode!, v.value]),
  );
}

describe("a collection watch's meter", () => {
  it("counts a recovery only after a connection that ended on an error or 410, by resume or replay", async () => {
    const meter = new WatchMeter({ namespace: "team", name: "recovering" }, collection);
    meter.started("initial");
    meter.ended("timeout");
    meter.started("resume"); // a quiet reconnect: no recovery
    meter.ended("error");
    meter.started("resume");
    meter.ended("gone");
    meter.started("reinitialize");
    meter.ended("resync");
    meter.started("reinitialize"); // a resync's snapshot: no recovery
    assert.deepEqual(await recoveries("recovering"), { resume: 1, replay: 1 });
    const registry = new Registry();
    registry.registerMetric(watchSessionEnds);
    assert.match(await registry.metrics(), /reason="gone"\} 1/);
  });
});
